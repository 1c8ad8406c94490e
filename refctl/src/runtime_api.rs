//! A local Lambda Runtime API: hands out one event per `next` call and
//! collects what the function posts back, as the Lambda service would. The
//! Lambda entry-point test and the cold-start benchmark run the real function
//! binaries against it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api::store::config::Config;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

const PREFIX: &str = "/2018-06-01/runtime";

/// What a function posted for an invocation.
#[derive(Debug)]
pub enum Outcome {
    /// `POST …/invocation/{id}/response`.
    Response(Value),
    /// `POST …/invocation/{id}/error` (or an init error).
    Error(Value),
}

struct Invocation {
    id: String,
    event: Vec<u8>,
    reply: oneshot::Sender<Outcome>,
}

struct State {
    queue: tokio::sync::Mutex<mpsc::UnboundedReceiver<Invocation>>,
    pending: Mutex<HashMap<String, oneshot::Sender<Outcome>>>,
    init_error: Mutex<Option<oneshot::Sender<Outcome>>>,
    /// When the function first asked for an event: the end of its init.
    first_next: Mutex<Option<Instant>>,
}

/// The command that runs a function binary against `api` with only what
/// Lambda and the template would set: nothing of the caller's environment.
pub fn function_command(exe: &Path, name: &str, api: &RuntimeApi, config: &Config) -> Command {
    let mut cmd = Command::new(exe);
    let optional = |v: &Option<String>| v.clone().unwrap_or_default();
    cmd.env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", api.addr.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", name)
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "local/stream")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
        .env("AWS_REGION", &config.region)
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("DYNAMODB_ENDPOINT", optional(&config.dynamodb_endpoint))
        .env("S3_ENDPOINT", optional(&config.s3_endpoint))
        .env("TABLE_NAME", &config.table_name)
        .env("BUCKET_NAME", &config.bucket_name)
        .env("API_KEY_SECRET_ARN", optional(&config.api_key_secret_arn))
        .env("CLIENT_IP_SALT", &config.client_ip_salt)
        .env("RUST_LOG", "warn");
    cmd
}

/// One runtime endpoint on loopback, for one function process.
pub struct RuntimeApi {
    pub addr: SocketAddr,
    tx: mpsc::UnboundedSender<Invocation>,
    state: Arc<State>,
    count: Mutex<u64>,
}

impl RuntimeApi {
    /// Listens on 127.0.0.1 on a free port.
    pub async fn start() -> RuntimeApi {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let state = Arc::new(State {
            queue: tokio::sync::Mutex::new(rx),
            pending: Mutex::new(HashMap::new()),
            init_error: Mutex::new(None),
            first_next: Mutex::new(None),
        });
        let s = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let s = s.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| handle(req, s.clone()));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        RuntimeApi {
            addr,
            tx,
            state,
            count: Mutex::new(0),
        }
    }

    /// When the function process first asked for an event, if it has.
    pub fn first_next(&self) -> Option<Instant> {
        *self.state.first_next.lock().unwrap()
    }

    /// Hands an event to the function and waits for its answer. The wait is
    /// bounded only so a function that never answers fails the test instead
    /// of hanging it.
    pub async fn invoke(&self, event: &Value) -> Outcome {
        let id = {
            let mut n = self.count.lock().unwrap();
            *n += 1;
            format!("req-{}-{n}", self.addr.port())
        };
        let (reply, rx) = oneshot::channel();
        let (init_tx, init_rx) = oneshot::channel();
        *self.state.init_error.lock().unwrap() = Some(init_tx);
        self.tx
            .send(Invocation {
                id,
                event: serde_json::to_vec(event).unwrap(),
                reply,
            })
            .unwrap();
        tokio::select! {
            r = rx => r.expect("the runtime dropped the invocation"),
            Ok(e) = init_rx => e,
            _ = tokio::time::sleep(Duration::from_secs(60)) => panic!("no answer from the function"),
        }
    }
}

async fn handle(
    req: hyper::Request<Incoming>,
    state: Arc<State>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let rest = path.strip_prefix(PREFIX).unwrap_or("");
    if method == hyper::Method::GET && rest == "/invocation/next" {
        state
            .first_next
            .lock()
            .unwrap()
            .get_or_insert_with(Instant::now);
        let Some(inv) = state.queue.lock().await.recv().await else {
            return Ok(reply(500, Vec::new()));
        };
        let deadline = chrono::Utc::now().timestamp_millis() + 30_000;
        state
            .pending
            .lock()
            .unwrap()
            .insert(inv.id.clone(), inv.reply);
        return Ok(hyper::Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .header("lambda-runtime-aws-request-id", &inv.id)
            .header("lambda-runtime-deadline-ms", deadline.to_string())
            .header(
                "lambda-runtime-invoked-function-arn",
                "arn:aws:lambda:us-east-1:123456789012:function:local",
            )
            .header(
                "lambda-runtime-trace-id",
                "Root=1-00000000-000000000000000000000000",
            )
            .body(Full::new(Bytes::from(inv.event)))
            .unwrap());
    }
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if rest == "/init/error" {
        if let Some(tx) = state.init_error.lock().unwrap().take() {
            let _ = tx.send(Outcome::Error(value));
        }
        return Ok(reply(202, Vec::new()));
    }
    let Some(tail) = rest.strip_prefix("/invocation/") else {
        return Ok(reply(404, Vec::new()));
    };
    let (id, kind) = tail.split_once('/').unwrap_or((tail, ""));
    let Some(tx) = state.pending.lock().unwrap().remove(id) else {
        return Ok(reply(400, Vec::new()));
    };
    let _ = tx.send(match kind {
        "response" => Outcome::Response(value),
        _ => Outcome::Error(value),
    });
    Ok(reply(202, br#"{"status":"OK"}"#.to_vec()))
}

fn reply(status: u16, body: Vec<u8>) -> hyper::Response<Full<Bytes>> {
    hyper::Response::builder()
        .status(status)
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}
