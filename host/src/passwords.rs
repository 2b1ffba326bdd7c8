//! Password hashing for the engine's `host.hash-password` / `host.verify-password`
//! imports: argon2id, m = 19 MiB, t = 2, p = 1 (DESIGN.md §4).

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

pub struct Passwords {
    argon: Argon2<'static>,
    /// A hash of a random password, checked when the account does not exist so that an
    /// unknown email costs the same time as a wrong password.
    dummy: String,
}

impl Default for Passwords {
    fn default() -> Self {
        Self::new()
    }
}

impl Passwords {
    /// A hasher with the DESIGN.md parameters and a fresh dummy hash.
    pub fn new() -> Passwords {
        let params = Params::new(19 * 1024, 2, 1, None).expect("valid argon2 parameters");
        let argon = Argon2::new(Algorithm::Argon2id, Version::V0x13, params);
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).expect("OS randomness");
        let dummy = hash_with(&argon, &format!("{random:?}"));
        Passwords { argon, dummy }
    }

    /// A PHC string (`$argon2id$v=19$m=19456,t=2,p=1$...`).
    pub fn hash(&self, password: &str) -> String {
        hash_with(&self.argon, password)
    }

    /// Whether `password` matches `hash`; an empty or unparsable `hash` is checked
    /// against the dummy and is false.
    pub fn verify(&self, password: &str, hash: &str) -> bool {
        let real = PasswordHash::new(hash).ok();
        let parsed = real
            .clone()
            .unwrap_or_else(|| PasswordHash::new(&self.dummy).expect("dummy hash parses"));
        let ok = self
            .argon
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        ok && real.is_some()
    }
}

fn hash_with(argon: &Argon2<'static>, password: &str) -> String {
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).expect("OS randomness");
    let salt = SaltString::encode_b64(&random).expect("16 bytes is a valid salt");
    argon
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2 hashing with valid parameters")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_accepts_only_the_right_password() {
        let p = Passwords::new();
        let h = p.hash("correct horse");
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(p.verify("correct horse", &h));
        assert!(!p.verify("wrong horse", &h));
        assert!(!p.verify("correct horse", ""));
    }
}
