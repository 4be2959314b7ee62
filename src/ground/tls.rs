//! HTTPS for the judge (docs/JUDGE.md, "HTTPS"): rustls with graviola's
//! pure-Rust crypto, trusting Mozilla's roots (`webpki-root-certs`) and the
//! certificates of `VF_JUDGE_CA_FILE`. Certificate verification is always
//! on: nothing here can turn it off.

use std::path::Path;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use std::sync::Arc;

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig, TlsConfigBuilder, TlsProvider};

use crate::ground::env::EnvVars;
use crate::ground::error::{Result, VfError};

pub const CA_FILE_VAR: &str = EnvVars::VF_JUDGE_CA_FILE;

/// Every certificate of a PEM file: a usage error when the file cannot be
/// read or holds none.
pub fn load_ca_file(path: &Path) -> Result<Vec<Certificate<'static>>> {
    let display = path.display().to_string();
    let shown = crate::ground::text::cut(&display, 200);
    let pem = std::fs::read(path).map_err(|e| {
        VfError::usage(format!(
            "{CA_FILE_VAR} {shown:?} cannot be read: {e}; nothing was sent"
        ))
    })?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item {
            Ok(PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => {
                return Err(VfError::usage(format!(
                    "{CA_FILE_VAR} {shown:?} is not valid PEM: {e}; nothing was sent"
                )));
            }
        }
    }
    if certs.is_empty() {
        return Err(VfError::usage(format!(
            "{CA_FILE_VAR} {shown:?} holds no PEM certificate; nothing was sent"
        )));
    }
    Ok(certs)
}

/// The TLS configuration for an `https://` call, or why this build or CPU
/// cannot make one (checked before connecting: graviola asserts its CPU
/// features, and vf never panics).
pub fn config(extra: &[Certificate<'static>]) -> std::result::Result<TlsConfig, String> {
    let roots: Vec<Certificate<'static>> = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .map(|der| Certificate::from_der(der.as_ref()).to_owned())
        .chain(extra.iter().cloned())
        .collect();
    let builder = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(RootCerts::new_with_certs(&roots));
    Ok(with_crypto(builder)?.build())
}

/// Makes graviola rustls's process-wide crypto provider, for a TLS client
/// that takes the default (Temporal's gRPC client); or says why it cannot.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn install_process_provider() -> std::result::Result<(), String> {
    let missing = missing_cpu_features();
    if !missing.is_empty() {
        return Err(format!(
            "this CPU lacks {}, which vf's TLS crypto (graviola) needs",
            missing.join(", ")
        ));
    }
    // Already installed (by an earlier call): the same provider.
    let _ = rustls_graviola::default_provider().install_default();
    Ok(())
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn install_process_provider() -> std::result::Result<(), String> {
    Err("this build of vf has no TLS crypto (x86_64 and aarch64 only)".to_string())
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn with_crypto(b: TlsConfigBuilder) -> std::result::Result<TlsConfigBuilder, String> {
    let missing = missing_cpu_features();
    if !missing.is_empty() {
        return Err(format!(
            "this CPU lacks {}, which vf's TLS crypto (graviola) needs; \
             reach the judge through an http:// proxy on loopback",
            missing.join(", ")
        ));
    }
    Ok(b.unversioned_rustls_crypto_provider(Arc::new(rustls_graviola::default_provider())))
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn with_crypto(_: TlsConfigBuilder) -> std::result::Result<TlsConfigBuilder, String> {
    Err(
        "this build of vf has no TLS crypto (x86_64 and aarch64 only); \
         reach the judge through an http:// proxy on loopback"
            .to_string(),
    )
}

/// The CPU features graviola requires (its README, "Limitations") that this
/// CPU lacks.
#[cfg(target_arch = "x86_64")]
fn missing_cpu_features() -> Vec<&'static str> {
    let have = [
        ("aes", std::arch::is_x86_feature_detected!("aes")),
        ("ssse3", std::arch::is_x86_feature_detected!("ssse3")),
        ("avx", std::arch::is_x86_feature_detected!("avx")),
        ("avx2", std::arch::is_x86_feature_detected!("avx2")),
        ("adx", std::arch::is_x86_feature_detected!("adx")),
        ("bmi2", std::arch::is_x86_feature_detected!("bmi2")),
        (
            "pclmulqdq",
            std::arch::is_x86_feature_detected!("pclmulqdq"),
        ),
    ];
    lacking(&have)
}

#[cfg(target_arch = "aarch64")]
fn missing_cpu_features() -> Vec<&'static str> {
    let have = [
        ("aes", std::arch::is_aarch64_feature_detected!("aes")),
        ("sha2", std::arch::is_aarch64_feature_detected!("sha2")),
        ("pmull", std::arch::is_aarch64_feature_detected!("pmull")),
        ("neon", std::arch::is_aarch64_feature_detected!("neon")),
    ];
    lacking(&have)
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn lacking(have: &[(&'static str, bool)]) -> Vec<&'static str> {
    have.iter()
        .filter_map(|&(name, ok)| (!ok).then_some(name))
        .collect()
}
