//! The sandbox's SSH keys made in this process: an ed25519 key pair written as OpenSSH writes
//! it (`openssh-key-v1`, unencrypted, and the `.pub` line), so `up` does not start one
//! `ssh-keygen` per node (~6 ms of CPU each, a fifth of a 100-node `up` on the 2-core machine).
//!
//! Owns the key files' format. Does not own where the keys go or who reads them (`node`).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{Ed25519KeyPair, KeyPair};

use super::host::{io_err, write_file};
use super::{Result, SandboxError};

const KEY_TYPE: &str = "ssh-ed25519";

fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// The public key blob: key type and the 32-byte public key.
fn public_blob(public: &[u8]) -> Vec<u8> {
    let mut blob = Vec::new();
    put_string(&mut blob, KEY_TYPE.as_bytes());
    put_string(&mut blob, public);
    blob
}

/// The private key file's text for (`seed`, `public`), as `ssh-keygen` writes it.
fn private_text(seed: &[u8; 32], public: &[u8], comment: &str, check: u32) -> String {
    let mut private = Vec::new();
    private.extend_from_slice(&check.to_be_bytes());
    private.extend_from_slice(&check.to_be_bytes());
    put_string(&mut private, KEY_TYPE.as_bytes());
    put_string(&mut private, public);
    let mut secret = seed.to_vec();
    secret.extend_from_slice(public);
    put_string(&mut private, &secret);
    put_string(&mut private, comment.as_bytes());
    let mut pad = 1u8;
    while private.len() % 8 != 0 {
        private.push(pad);
        pad += 1;
    }
    let mut body = b"openssh-key-v1\0".to_vec();
    put_string(&mut body, b"none");
    put_string(&mut body, b"none");
    put_string(&mut body, b"");
    body.extend_from_slice(&1u32.to_be_bytes());
    put_string(&mut body, &public_blob(public));
    put_string(&mut body, &private);
    let encoded = B64.encode(&body);
    let mut text = String::from("-----BEGIN OPENSSH PRIVATE KEY-----\n");
    for chunk in encoded.as_bytes().chunks(70) {
        text.push_str(&String::from_utf8_lossy(chunk));
        text.push('\n');
    }
    text.push_str("-----END OPENSSH PRIVATE KEY-----\n");
    text
}

/// Writes a new ed25519 key to `path` (mode 0600) and its public line to `path.pub` (0644).
pub(super) fn generate(path: &Path, comment: &str) -> Result<()> {
    let rng = SystemRandom::new();
    let mut seed = [0u8; 32];
    let mut check = [0u8; 4];
    let failed = |what: &str| SandboxError::State {
        path: path.to_path_buf(),
        reason: format!("cannot make an ed25519 key: {what}"),
    };
    rng.fill(&mut seed).map_err(|_| failed("no randomness"))?;
    rng.fill(&mut check).map_err(|_| failed("no randomness"))?;
    let pair = Ed25519KeyPair::from_seed_unchecked(&seed).map_err(|e| failed(&e.to_string()))?;
    let public = pair.public_key().as_ref().to_vec();
    let text = private_text(&seed, &public, comment, u32::from_be_bytes(check));
    // Created 0600: the secret is never readable by others, not even between write and chmod.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(io_err("write", path))?;
    let line = format!(
        "{KEY_TYPE} {} {comment}\n",
        B64.encode(public_blob(&public))
    );
    write_file(&path.with_extension("pub"), &line, 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_private_key_is_openssh_key_v1_padded_and_armoured() {
        let seed = [7u8; 32];
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
        let public = pair.public_key().as_ref().to_vec();
        let text = private_text(&seed, &public, "n1@sandbox-x", 0x01020304);
        assert!(text.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"));
        assert!(text.ends_with("\n-----END OPENSSH PRIVATE KEY-----\n"));
        assert!(
            text.lines()
                .all(|l| l.len() <= 70 || l.starts_with("-----"))
        );
        let b64: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
        let body = B64.decode(b64).unwrap();
        assert!(body.starts_with(b"openssh-key-v1\0\0\0\0\x04none"));
        // The private section (after its 4-byte length) is a whole number of 8-byte blocks.
        let blob = public_blob(&public);
        let at = 15 + 8 + 8 + 4 + 4 + 4 + blob.len();
        let len = u32::from_be_bytes(body[at..at + 4].try_into().unwrap()) as usize;
        assert_eq!(len % 8, 0);
        assert_eq!(body.len(), at + 4 + len);
        assert_eq!(&body[at + 4..at + 12], &[1, 2, 3, 4, 1, 2, 3, 4]);
    }
}
