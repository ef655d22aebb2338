//! An MCP Bundle's signature, as `mcpb sign` writes it: the zip, then `MCPB_SIG_V1`, the length
//! of a PKCS#7 (CMS) signature as a little-endian u32, that DER signature (detached, SHA-256, over
//! the zip's bytes), and `MCPB_SIG_END` at the very end of the file.
//!
//! OpenSSL does the cryptography (the copy native-tls already links): the signature over the
//! content, then the signer's certificate chain against this system's trusted certificates, and
//! the signer's certificate must be one for signing code (its extended key usage names code
//! signing): a website's certificate from a trusted authority proves nothing about code.
//!
//! The outcome: signed, untrusted (`notForCode` when the certificate is not a code-signing one), or
//! unsigned; a block that does not verify refuses the bundle. The extended key usage is read
//! through openssl-sys.

use serde::Serialize;

const HEADER: &[u8] = b"MCPB_SIG_V1";
const FOOTER: &[u8] = b"MCPB_SIG_END";

/// What a bundle's signature says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum Signature {
    /// No signature: the preview says "unsigned".
    Unsigned,
    /// Signed, by a code-signing certificate this system trusts.
    #[serde(rename_all = "camelCase")]
    Signed {
        publisher: String,
        issuer: String,
        fingerprint: String,
    },
    /// Signed over exactly these bytes, but by a certificate this system does not trust (a
    /// self-signed one, or one of an unknown authority), or one that is not for signing code
    /// (`not_for_code`: no code-signing extended key usage): who it claims to be proves nothing.
    #[serde(rename_all = "camelCase")]
    Untrusted {
        publisher: String,
        fingerprint: String,
        not_for_code: bool,
    },
}

/// A signature block that is there but does not hold: the bundle is refused.
#[derive(Debug, thiserror::Error)]
#[error("its signature {0}")]
pub struct BadSignature(pub String);

/// The zip's bytes (without the signature block) and the signature's DER, if it has one.
pub fn split(file: &[u8]) -> Result<(&[u8], Option<&[u8]>), BadSignature> {
    if !file.ends_with(FOOTER) {
        return Ok((file, None));
    }
    let end = file.len() - FOOTER.len();
    // the header is found backwards from the footer, as mcpb does; the length must then fit
    let Some(start) = find_last(&file[..end], HEADER) else {
        return Err(BadSignature("block has no start".into()));
    };
    let at = start + HEADER.len();
    let len_bytes: [u8; 4] = file
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| BadSignature("block is cut short".into()))?;
    let len = u32::from_le_bytes(len_bytes) as usize;
    if at + 4 + len != end {
        return Err(BadSignature("block's length does not match".into()));
    }
    Ok((&file[..start], Some(&file[at + 4..end])))
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// Checks `der` as a signature over `content`: refused when it does not verify; else who signed,
/// and whether this system trusts them. `extra_roots` (PEM): more trusted certificates (tests).
#[cfg(target_os = "linux")]
pub fn verify(content: &[u8], der: &[u8], extra_roots: &[u8]) -> Result<Signature, BadSignature> {
    use openssl::pkcs7::{Pkcs7, Pkcs7Flags};
    use openssl::stack::Stack;
    use openssl::x509::store::X509StoreBuilder;
    use openssl::x509::{X509StoreContext, X509};

    let bad = |what: &str, e: openssl::error::ErrorStack| BadSignature(format!("{what} ({e})"));
    let p7 = Pkcs7::from_der(der).map_err(|e| bad("cannot be read", e))?;
    let certs: Stack<X509> = p7
        .signed()
        .and_then(|s| s.certificates())
        .map(|c| {
            let mut s = Stack::new().expect("a stack");
            for x in c {
                let _ = s.push(x.to_owned());
            }
            s
        })
        .unwrap_or_else(|| Stack::new().expect("a stack"));
    // the signature over exactly these bytes (the chain is checked below, on its own)
    let empty = X509StoreBuilder::new()
        .map_err(|e| bad("cannot be checked", e))?
        .build();
    p7.verify(
        &certs,
        &empty,
        Some(content),
        None,
        Pkcs7Flags::NOVERIFY | Pkcs7Flags::BINARY,
    )
    .map_err(|e| bad("does not match this bundle's content", e))?;
    let signer = p7
        .signers(&certs, Pkcs7Flags::empty())
        .map_err(|e| bad("names no signer", e))?
        .iter()
        .next()
        .map(|c| c.to_owned())
        .ok_or_else(|| BadSignature("names no signer".into()))?;
    let publisher = common_name(signer.subject_name());
    let fingerprint = signer
        .digest(openssl::hash::MessageDigest::sha256())
        .map(|d| d.iter().map(|b| format!("{b:02x}")).collect::<String>())
        .unwrap_or_default();
    let mut trust = X509StoreBuilder::new().map_err(|e| bad("cannot be checked", e))?;
    let _ = trust.set_default_paths();
    for c in X509::stack_from_pem(extra_roots).unwrap_or_default() {
        let _ = trust.add_cert(c);
    }
    let trust = trust.build();
    let mut ctx = X509StoreContext::new().map_err(|e| bad("cannot be checked", e))?;
    let trusted = ctx
        .init(&trust, &signer, &certs, |c| c.verify_cert())
        .unwrap_or(false);
    let for_code = for_code_signing(&signer);
    Ok(if trusted && for_code {
        Signature::Signed {
            publisher,
            issuer: common_name(signer.issuer_name()),
            fingerprint,
        }
    } else {
        Signature::Untrusted {
            publisher,
            fingerprint,
            not_for_code: !for_code,
        }
    })
}

/// Whether `cert` has an extended key usage and it names code signing (a certificate with none
/// may be used for anything, which is not a code-signing certificate).
#[cfg(target_os = "linux")]
fn for_code_signing(cert: &openssl::x509::X509Ref) -> bool {
    use foreign_types::ForeignTypeRef;
    // SAFETY: `cert` is a valid X509 for the call; these read (and cache) its extensions
    let (flags, xku) = unsafe {
        let ptr = cert.as_ptr();
        (
            openssl_sys::X509_get_extension_flags(ptr),
            openssl_sys::X509_get_extended_key_usage(ptr),
        )
    };
    flags & openssl_sys::EXFLAG_XKUSAGE != 0 && xku & openssl_sys::XKU_CODE_SIGN != 0
}

#[cfg(target_os = "linux")]
fn common_name(n: &openssl::x509::X509NameRef) -> String {
    n.entries_by_nid(openssl::nid::Nid::COMMONNAME)
        .next()
        .and_then(|e| e.data().to_string().ok())
        .unwrap_or_else(|| "unknown".into())
}

/// Elsewhere, a signature cannot be checked here: refused rather than taken on trust.
#[cfg(not(target_os = "linux"))]
pub fn verify(_: &[u8], _: &[u8], _: &[u8]) -> Result<Signature, BadSignature> {
    Err(BadSignature("cannot be checked on this system".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(sig: &[u8]) -> Vec<u8> {
        let mut v = HEADER.to_vec();
        v.extend_from_slice(&(sig.len() as u32).to_le_bytes());
        v.extend_from_slice(sig);
        v.extend_from_slice(FOOTER);
        v
    }

    #[test]
    fn the_block_is_found_at_the_end_or_the_file_is_unsigned() {
        let zip = b"PK\x03\x04 zip bytes".to_vec();
        assert_eq!(split(&zip).unwrap(), (&zip[..], None));
        let mut signed = zip.clone();
        signed.extend(block(b"DER"));
        let (content, sig) = split(&signed).unwrap();
        assert_eq!(content, &zip[..]);
        assert_eq!(sig, Some(&b"DER"[..]));
        // a length that does not reach the footer, or no header: refused, never "unsigned"
        let mut lying = signed.clone();
        let at = zip.len() + HEADER.len();
        lying[at] = 9;
        assert!(split(&lying).is_err());
        let mut headless = zip.clone();
        headless.extend_from_slice(FOOTER);
        assert!(split(&headless).is_err());
    }
}
