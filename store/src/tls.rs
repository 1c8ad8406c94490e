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
    fn the_webhook_client_config_offers_tls_1_2_and_1_3() {
        let config = webhook_client_config();
        assert!(config.crypto_provider().cipher_suites.len() >= 3);
    }

    const TEST_CA: &[u8] = include_bytes!("../tests/fixtures/test-ca.pem");
    const LEAF: &[u8] = include_bytes!("../tests/fixtures/localhost-cert.pem");
    const LEAF_KEY: &[u8] = include_bytes!("../tests/fixtures/localhost-key.pem");

    /// A TLS server on loopback, with a certificate for `localhost` from a
    /// test CA, answering every request with an empty ListTables result.
    async fn tls_server() -> u16 {
        use rustls::pki_types::PrivateKeyDer;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(LEAF).unwrap()],
            PrivateKeyDer::from_pem_slice(LEAF_KEY).unwrap(),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    continue;
                };
                let mut buf = vec![0u8; 16 * 1024];
                let _ = tls.read(&mut buf).await;
                let body = "{}";
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\n\
                     content-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            }
        });
        port
    }

    /// A DynamoDB client on `http` calling the server on `port`.
    fn dynamodb(http: SharedHttpClient, port: u16) -> aws_sdk_dynamodb::Client {
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "test", "test", None, None, "test",
            ))
            .http_client(http)
            .endpoint_url(format!("https://localhost:{port}"))
            .build();
        aws_sdk_dynamodb::Client::from_conf(config)
    }

    #[tokio::test]
    async fn sdk_clients_refuse_a_server_no_amazon_root_vouches_for() {
        let port = tls_server().await;
        // The same server is fine for a client that trusts its CA, so the
        // refusal below is the trust store's doing, not the handshake's.
        let trusting = aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
            .tls_context(
                TlsContext::builder()
                    .with_trust_store(TrustStore::empty().with_pem_certificate(TEST_CA))
                    .build()
                    .unwrap(),
            )
            .build_https();
        let listed = dynamodb(trusting, port).list_tables().send().await;
        assert!(listed.is_ok(), "{listed:?}");

        let refused = dynamodb(sdk_http_client(), port).list_tables().send().await;
        let err = format!("{:?}", refused.expect_err("an unknown issuer is refused"));
        assert!(err.contains("UnknownIssuer"), "{err}");
    }
}
