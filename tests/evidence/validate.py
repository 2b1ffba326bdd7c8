"""Validates the last signature of a PDF with pyHanko; prints what it found as JSON.

Usage: validate.py FILE.pdf SIGNER_ROOT.pem [TSA_ROOT.pem]
"""
import json
import sys

from pyhanko.keys import load_cert_from_pemder
from pyhanko.pdf_utils.reader import PdfFileReader
from pyhanko.sign.validation import validate_pdf_signature
from pyhanko_certvalidator import ValidationContext


def main():
    path, root = sys.argv[1], sys.argv[2]
    tsa_root = sys.argv[3] if len(sys.argv) > 3 else None
    vc = ValidationContext(trust_roots=[load_cert_from_pemder(root)], allow_fetching=False)
    ts_vc = (
        ValidationContext(trust_roots=[load_cert_from_pemder(tsa_root)], allow_fetching=False)
        if tsa_root
        else None
    )
    with open(path, "rb") as f:
        r = PdfFileReader(f)
        sigs = r.embedded_signatures
        sig = sigs[-1]
        status = validate_pdf_signature(sig, vc, ts_validation_context=ts_vc)
        attrs = sig.signer_info["signed_attrs"]
        names = [a["type"].native for a in attrs]
        ts = status.timestamp_validity
        print(
            json.dumps(
                {
                    "signatures": len(sigs),
                    "bottom_line": status.bottom_line,
                    "intact": status.intact,
                    "valid": status.valid,
                    "trusted": status.trusted,
                    "coverage": status.coverage.name if status.coverage else None,
                    "subfilter": str(sig.sig_object.get("/SubFilter")),
                    "signed_attrs": names,
                    "has_m": "/M" in sig.sig_object,
                    "timestamp": None
                    if ts is None
                    else {"intact": ts.intact, "valid": ts.valid, "trusted": ts.trusted},
                }
            )
        )


if __name__ == "__main__":
    main()
