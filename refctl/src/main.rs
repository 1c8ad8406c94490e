//! `refctl`: what the dashboard and operations would do, printing JSON.

use std::path::PathBuf;
use std::sync::Arc;

use api::domain::tenant::Mode;
use api::domain::timestamp;
use api::services::app::App;
use api::store::config::Config;
use clap::{Parser, Subcommand, ValueEnum};
use serde_json::Value;

#[derive(Parser)]
#[command(
    name = "refctl",
    about = "Operator CLI and local host for the affiliate API"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the OpenAPI description, generated from the code (`docs/openapi.json`).
    Openapi,
    /// Serve every function's routes on one local HTTP server.
    Serve {
        #[arg(long, default_value_t = 3000)]
        port: u16,
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
    },
    /// The table and the bucket.
    Tables {
        #[command(subcommand)]
        command: TablesCommand,
    },
    /// Merchant accounts.
    Account {
        #[command(subcommand)]
        command: AccountCommand,
    },
    /// API keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Demo data.
    Demo {
        #[command(subcommand)]
        command: DemoCommand,
    },
    /// The payout job.
    Payouts {
        #[command(subcommand)]
        command: PayoutsCommand,
    },
    /// Payout invoices.
    Invoice {
        #[command(subcommand)]
        command: InvoiceCommand,
    },
}

#[derive(Subcommand)]
enum PayoutsCommand {
    /// Run the payout job once (approve due conversions, open payouts, finish work).
    Run {
        /// The job's clock (default: now), e.g. to see a hold period end.
        #[arg(long)]
        now: Option<String>,
        /// Stop after this many records; the next run goes on.
        #[arg(long)]
        max_items: Option<usize>,
    },
}

#[derive(Subcommand)]
enum InvoiceCommand {
    /// Put a file in storage as the payout's invoice and handle it as S3's event would.
    Attach {
        #[arg(long)]
        payout: String,
        #[arg(long)]
        file: std::path::PathBuf,
    },
}

#[derive(Subcommand)]
enum TablesCommand {
    /// Create the table and the bucket as template.yaml declares them (and,
    /// on the local stack, the signing secret).
    Create,
}

#[derive(Subcommand)]
enum AccountCommand {
    /// Create an account.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "free")]
        plan: String,
    },
    /// Lock an account (its keys get 403).
    Lock {
        #[arg(long)]
        account: String,
    },
    /// Unlock an account.
    Unlock {
        #[arg(long)]
        account: String,
    },
    /// Set when the subscription expires (`never` for no expiry).
    SetSubscription {
        #[arg(long)]
        account: String,
        #[arg(long)]
        expires: String,
    },
    /// Set the origins that may frame the affiliate portal (none: its own only).
    SetPortalFrameAncestors {
        #[arg(long)]
        account: String,
        /// `https://host[:port]` (or `http://localhost[:port]`), repeatable.
        #[arg(long = "origin")]
        origins: Vec<String>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Live,
    Test,
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Create a key; its value is printed once.
    Create {
        #[arg(long)]
        account: String,
        #[arg(long)]
        name: String,
        #[arg(long, value_enum)]
        mode: ModeArg,
    },
    /// Revoke a key for good.
    Revoke {
        #[arg(long = "key-id")]
        key_id: String,
    },
    /// List an account's keys (no values).
    List {
        #[arg(long)]
        account: String,
    },
}

#[derive(Subcommand)]
enum DemoCommand {
    /// Seed the demo account once; later runs print the saved keys.
    Seed {
        #[arg(long, default_value = ".local/demo-keys.json")]
        keys_file: PathBuf,
        #[arg(long, default_value = "http://127.0.0.1:3000")]
        base_url: String,
    },
}

fn print(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).expect("JSON prints"));
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    // Needs no configuration and no store: the description is the code's.
    if matches!(cli.command, Command::Openapi) {
        print(&refctl::openapi::document());
        return;
    }
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if matches!(cli.command, Command::Serve { .. }) {
        api::services::app::init_tracing();
    }
    // `tables create` makes the local signing secret, so it must not need it yet.
    let app = if matches!(cli.command, Command::Tables { .. }) {
        Ok(App::new(config).await)
    } else {
        App::init(config).await
    };
    let result = match app {
        Ok(app) => run(cli.command, app).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(Some(v)) => print(&v),
        Ok(None) => {}
        Err(e) => {
            print(
                &serde_json::json!({ "error": { "code": e.code().as_str(), "message": e.to_string() } }),
            );
            std::process::exit(1);
        }
    }
}

async fn run(command: Command, app: Arc<App>) -> Result<Option<Value>, api::Error> {
    use refctl::setup;
    Ok(Some(match command {
        Command::Openapi => refctl::openapi::document(),
        Command::Serve { port, host } => {
            let listener = tokio::net::TcpListener::bind((host.as_str(), port))
                .await
                .map_err(|e| {
                    api::Error::internal(format!("cannot listen on {host}:{port}: {e}"))
                })?;
            eprintln!("refctl: serving the API on http://{host}:{port}");
            refctl::serve::serve(listener, app)
                .await
                .map_err(api::Error::internal)?;
            return Ok(None);
        }
        Command::Tables {
            command: TablesCommand::Create,
        } => setup::tables_create(&app).await?,
        Command::Account { command } => match command {
            AccountCommand::Create { name, plan } => {
                setup::account_create(&app, &name, &plan).await?
            }
            AccountCommand::Lock { account } => setup::account_lock(&app, &account, true).await?,
            AccountCommand::Unlock { account } => {
                setup::account_lock(&app, &account, false).await?
            }
            AccountCommand::SetSubscription { account, expires } => {
                let when = if expires == "never" {
                    None
                } else {
                    Some(timestamp::parse_datetime(&expires).ok_or_else(|| {
                        api::Error::invalid(
                            &["expires"],
                            "invalid_date",
                            "expires must be an ISO-8601 date-time or never",
                        )
                    })?)
                };
                setup::account_subscription(&app, &account, when).await?
            }
            AccountCommand::SetPortalFrameAncestors { account, origins } => {
                setup::account_frame_ancestors(&app, &account, &origins).await?
            }
        },
        Command::Key { command } => match command {
            KeyCommand::Create {
                account,
                name,
                mode,
            } => {
                let mode = match mode {
                    ModeArg::Live => Mode::Live,
                    ModeArg::Test => Mode::Test,
                };
                setup::key_create(&app, &account, &name, mode).await?
            }
            KeyCommand::Revoke { key_id } => setup::key_revoke(&app, &key_id).await?,
            KeyCommand::List { account } => setup::key_list(&app, &account).await?,
        },
        Command::Demo {
            command:
                DemoCommand::Seed {
                    keys_file,
                    base_url,
                },
        } => refctl::demo::seed(&app, &keys_file, &base_url).await?,
        Command::Payouts {
            command: PayoutsCommand::Run { now, max_items },
        } => refctl::payouts::run(&app, now.as_deref(), max_items).await?,
        Command::Invoice {
            command: InvoiceCommand::Attach { payout, file },
        } => refctl::payouts::attach(&app, &payout, &file, timestamp::now()).await?,
    }))
}
