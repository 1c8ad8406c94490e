//! Outgoing HTTPS: one TLS stack (rustls) on one crypto backend (ring) for
//! the AWS SDK clients and the webhook deliveries.
//!
//! The SDK clients trust only the Amazon Trust Services roots, compiled in:
//! every AWS service endpoint chains to them, so no platform certificate store
//! is read and parsed while a function starts (the SDK's default client reads
//! every file of `/etc/ssl/certs` during init), and no other authority can
//! vouch for an AWS endpoint. Webhook deliveries go to any merchant's server,
//! so they trust the Mozilla roots (`webpki-roots`), also compiled in.

use std::sync::Arc;

use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
use aws_smithy_runtime_api::client::http::SharedHttpClient;

/// Amazon Root CA 1 to 4 and the Starfield Services root that cross-signs
/// them (<https://www.amazontrust.com/repository/>), as PEM.
pub const AMAZON_ROOTS_PEM: &[u8] = include_bytes!("../certs/amazon-trust-services.pem");

/// The HTTP client every SDK client of a process shares: hyper with rustls
/// on ring, trusting the Amazon roots.
pub fn sdk_http_client() -> SharedHttpClient {
    let context = TlsContext::builder()
        .with_trust_store(TrustStore::empty().with_pem_certificate(AMAZON_ROOTS_PEM))
        .build()
        // Only extra server names can make this fail, and none are given.
        .expect("a TLS context of a trust store builds");
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .tls_context(context)
        .build_https()
}

/// The TLS set-up for webhook deliveries: rustls on ring, trusting the
/// Mozilla roots. Explicit, so no process-wide default provider is needed.
pub fn webhook_client_config() -> rustls::ClientConfig {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        // The provider above supports the default versions: a failure is a broken build.
        .expect("ring supports TLS 1.2 and 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;

    #[test]
    fn the_amazon_roots_parse_as_five_trust_anchors() {
        let certs = CertificateDer::pem_slice_iter(AMAZON_ROOTS_PEM)
            .collect::<Result<Vec<_>, _>>()
            .expect("the bundle is PEM");
        assert_eq!(certs.len(), 5);
        let mut store = rustls::RootCertStore::empty();
        let (added, refused) = store.add_parsable_certificates(certs);
        assert_eq!((added, refused), (5, 0));
    }

    #[test]
    fn both_clients_build() {
        let _ = sdk_http_client();
        let config = webhook_client_config();
        assert!(config.crypto_provider().cipher_suites.len() >= 3);
    }
}
