"""A test time stamping authority (RFC 3161) on loopback, for tests/evidence.rs.

Usage: tsa.py PORT DIR. Makes (once) a test CA and a TSA certificate in DIR
(`ca.pem`, the trust root), then answers POSTed TimeStampReqs with pyHanko's
DummyTimeStamper until killed. Prints "ready" when listening.
"""
import datetime
import http.server
import os
import sys

from asn1crypto import keys, tsp, x509
from cryptography import x509 as cx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from pyhanko.sign.timestamps.dummy_client import DummyTimeStamper


def make_pki(d):
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = cx.Name([cx.NameAttribute(NameOID.COMMON_NAME, "esign test TSA root")])
    ca = (
        cx.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(cx.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(cx.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            cx.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    # RSA: pyHanko's DummyTimeStamper signs with RSA only (as most real authorities do).
    tsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    tsa = (
        cx.CertificateBuilder()
        .subject_name(cx.Name([cx.NameAttribute(NameOID.COMMON_NAME, "esign test TSA")]))
        .issuer_name(ca_name)
        .public_key(tsa_key.public_key())
        .serial_number(cx.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(cx.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
        .add_extension(
            cx.KeyUsage(True, True, False, False, False, False, False, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    with open(os.path.join(d, "ca.pem"), "wb") as f:
        f.write(ca.public_bytes(pem))
    with open(os.path.join(d, "tsa.pem"), "wb") as f:
        f.write(tsa.public_bytes(pem))
    with open(os.path.join(d, "tsa.key"), "wb") as f:
        f.write(
            tsa_key.private_bytes(
                pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )


def main():
    port, d = int(sys.argv[1]), sys.argv[2]
    if not os.path.exists(os.path.join(d, "tsa.key")):
        make_pki(d)
    der = serialization.Encoding.DER

    def load_cert(name):
        with open(os.path.join(d, name), "rb") as f:
            c = cx.load_pem_x509_certificate(f.read())
        return x509.Certificate.load(c.public_bytes(der))

    with open(os.path.join(d, "tsa.key"), "rb") as f:
        k = serialization.load_pem_private_key(f.read(), None)
    key = keys.PrivateKeyInfo.load(
        k.private_bytes(der, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    stamper = DummyTimeStamper(tsa_cert=load_cert("tsa.pem"), tsa_key=key)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            resp = stamper.request_tsa_response(tsp.TimeStampReq.load(body))
            out = resp.dump()
            self.send_response(200)
            self.send_header("content-type", "application/timestamp-reply")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", port), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
