//! `shipment-server`: parse the command line, start logging, run.
#![warn(missing_docs)]

use std::io::IsTerminal as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use shipment_server::admin::{self, AdminCommand, Output};
use shipment_server::config::{DatabaseArgs, EnvironmentArgs};
use shipment_server::telemetry;
use shipment_server::{Application, Config, Store, shutdown_signal};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// mimalloc instead of the system allocator: a request allocates and frees
/// many small blocks (extractors, rows, JSON), often on different threads
/// (sqlx decodes rows on its worker thread; a request task frees them), and
/// glibc's arenas then take locks and consolidate: glibc's `malloc`, `free`
/// and their helpers were 13% of the server's CPU under reads by code,
/// mimalloc's are about 4.5%. Against the same build with the system
/// allocator, reads by code went about 8% up and `POST` 4%
/// (docs/src/appendix/benchmarks-history.md, "One `Arc` per request,
/// mimalloc, anonymous parameters"). SQLite's own C
/// allocations stay with the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The reference server of the merchant shipment service.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    /// Log lines as text for people or JSON for log collectors (every line
    /// of a request carries its request id either way).
    #[arg(long, env = "SHIPMENT_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
    /// More log lines: `-v` logs every request in the demo too, `-vv` logs
    /// at debug. `RUST_LOG`, when set, decides instead.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API.
    Serve(Box<Config>),
    /// Create or upgrade the database schema, then exit.
    Migrate(DatabaseArgs),
    /// Ask `/readyz` of the server that `serve` with the same flags and
    /// environment runs (on 127.0.0.1 or ::1 when it listens on every
    /// interface); exit 0 when it answers 2xx within 3 s, 1 otherwise. The
    /// container image's HEALTHCHECK: without flags, and with a `serve` as
    /// process 1, that server's own command line decides.
    Healthcheck(Box<Config>),
    /// Nothing to set up: seed a demo merchant, print how to use it, serve.
    Demo {
        /// Address to listen on.
        #[arg(long, env = "SHIPMENT_ADDR", default_value = "127.0.0.1:8080")]
        addr: std::net::SocketAddr,
        /// Database URL; by default a SQLite file in the working directory.
        #[arg(
            long,
            env = "DATABASE_URL",
            default_value = "sqlite://shipment-demo.db"
        )]
        database_url: String,
        /// Create shipments and move them through their lifecycle by
        /// themselves, so webhooks fire; one step every this many seconds.
        #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "3")]
        simulate: Option<u64>,
        /// Extra root certificates (PEM) to trust for webhook targets, such
        /// as a local receiver's own CA.
        #[arg(long, env = "SHIPMENT_WEBHOOK_CA_FILE")]
        webhook_ca_file: Option<std::path::PathBuf>,
        /// Serve the test controls under /api/v1/testing, as `serve
        /// --test-controls` does.
        #[arg(long, env = "SHIPMENT_TEST_CONTROLS")]
        test_controls: bool,
        /// Apply this fixtures file before seeding the demo merchant, as
        /// `serve --fixtures` does.
        #[arg(long, env = "SHIPMENT_FIXTURES", value_name = "FILE")]
        fixtures: Option<std::path::PathBuf>,
    },
    /// Print the OpenAPI 3.1 document of the API (the repository's
    /// `openapi.json` is this output).
    Openapi,
    /// Accounts and keys, without SQL.
    Admin {
        #[command(flatten)]
        database: DatabaseArgs,
        #[command(flatten)]
        environment: EnvironmentArgs,
        #[command(flatten)]
        output: Output,
        #[command(subcommand)]
        command: AdminCommand,
    },
}

/// The span exporter `serve --otlp-endpoint` asks for, built here, before
/// the runtime (the exporter's blocking client runs one of its own);
/// nothing is built without an endpoint.
#[cfg(feature = "otlp")]
fn otlp(command: &Command) -> anyhow::Result<Option<telemetry::Otlp>> {
    let Command::Serve(config) = command else {
        return Ok(None);
    };
    let Some(endpoint) = &config.otlp.otlp_endpoint else {
        return Ok(None);
    };
    shipment_server::harness::install_tls_provider();
    telemetry::otlp_layer(endpoint, config.otlp.otlp_protocol).map(Some)
}

/// Without the `otlp` feature an endpoint is refused rather than ignored:
/// an operator who asked for traces learns at start that this build
/// cannot send them, and how to get one that can.
#[cfg(not(feature = "otlp"))]
fn otlp(command: &Command) -> anyhow::Result<Option<std::convert::Infallible>> {
    if let Command::Serve(config) = command
        && config.otlp.otlp_endpoint.is_some()
    {
        anyhow::bail!(
            "--otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT): this shipment-server was built \
             without span export; build it with `--features otlp` (the container image has it)"
        );
    }
    Ok(None)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let demo = matches!(cli.command, Command::Demo { .. });
    let log_filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| default_log_filter(demo, cli.verbose).into());
    #[cfg_attr(not(feature = "otlp"), allow(unused_variables))]
    let otlp = match otlp(&cli.command) {
        Ok(otlp) => otlp,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    // Each layer has its own filter: the logs follow RUST_LOG and -v, the
    // exported spans `TRACE_FILTER`, so an operator who quiets the logs
    // (RUST_LOG=warn) does not stop the traces asked for with
    // --otlp-endpoint, nor does -vv export every debug span.
    #[cfg(feature = "otlp")]
    let traces = otlp.as_ref().map(|o| {
        o.layer()
            .with_filter(tracing_subscriber::EnvFilter::new(telemetry::TRACE_FILTER))
    });
    #[cfg(not(feature = "otlp"))]
    let traces: Option<tracing_subscriber::layer::Identity> = None;
    // Colours for a person at a terminal only: `docker logs`, CI logs and
    // files read the escape codes as text (as does anyone with NO_COLOR).
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour);
    let traced = tracing_subscriber::registry().with(traces);
    match cli.log_format {
        LogFormat::Text => traced.with(logs.with_filter(log_filter)).init(),
        LogFormat::Json => traced
            .with(
                logs.json()
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_filter(log_filter),
            )
            .init(),
    }
    #[cfg(feature = "otlp")]
    let provider = otlp.map(|o| o.provider);
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime starts");
    let code = match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    };
    drop(runtime);
    // Sends the spans still in the batch.
    #[cfg(feature = "otlp")]
    if let Some(provider) = provider
        && let Err(e) = provider.shutdown()
    {
        eprintln!("warning: the OTLP exporter did not flush: {e}");
    }
    code
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(config) => {
            let app = Application::build(&config).await?;
            let dashboard = app.dashboard_addr().unwrap_or(app.local_addr());
            // Listening for signals before saying it serves: whoever reads
            // "serving" may stop the server at once.
            let shutdown = shutdown_signal();
            tracing::info!(addr = %app.local_addr(), dashboard = %format!("http://{dashboard}/"), "serving");
            app.run_until(shutdown).await?;
        }
        Command::Healthcheck(config) => {
            // Only a bare `healthcheck` (the image's HEALTHCHECK) looks at
            // PID 1: flags of its own always decide.
            let bare = std::env::args_os().len() <= 2;
            let addr = bare.then(served_by_pid_1).flatten();
            healthcheck(addr.unwrap_or(config.addr)).await?;
        }
        Command::Openapi => {
            print!("{}", shipment_server::openapi_json());
        }
        Command::Migrate(database) => {
            let store = Store::connect(&database.database_url, database.pool()).await?;
            store.migrate().await?;
            println!("migrated {}", telemetry::redact_url(&database.database_url));
        }
        Command::Demo {
            addr,
            database_url,
            simulate,
            webhook_ca_file,
            test_controls,
            fixtures,
        } => {
            let mut config = Config::local(&database_url);
            config.addr = addr;
            config.webhooks.webhook_ca_file = webhook_ca_file;
            config.test_controls = test_controls;
            config.fixtures = fixtures;
            // The demo database outlives the process, so its data key must too.
            config.data_key.data_key = None;
            config.data_key.data_key_file = "shipment-demo.key".into();
            let app = Application::build(&config)
                .await
                .context("cannot start the demo")?;
            let env = config.environment.environment;
            let demo = admin::seed_demo(app.store(), env).await?;
            // As for `serve`: listening before the demo's text says it runs.
            let shutdown = shutdown_signal();
            let base = format!("http://{}/api/v1", app.local_addr());
            let dashboard = format!("http://{}/", app.local_addr());
            print_demo(&base, &dashboard, &demo);
            if let Some(secs) = simulate {
                let every = std::time::Duration::from_secs(secs.max(1));
                println!(
                    "Simulating: a shipment moves one step every {} s.\n",
                    every.as_secs()
                );
                tokio::spawn(shipment_server::simulate::run(base, demo, every));
            }
            app.run_until(shutdown).await?;
        }
        Command::Admin {
            database,
            environment,
            output,
            command,
        } => {
            let store = Store::connect(&database.database_url, database.pool()).await?;
            store.migrate().await?;
            let value = command.run(&store, environment.environment).await?;
            if output.json {
                println!("{value}");
            } else {
                println!("{}", serde_json::to_string_pretty(&value)?);
            }
        }
    }
    Ok(())
}

/// What is logged when `RUST_LOG` does not say. A server logs one line per
/// request; the demo does not unless `-v` asks, because it talks to a
/// person at a terminal: request lines (one per call, several a second
/// with `--simulate`) would scroll the key and the commands it printed
/// away. Warnings and the server's own lines (webhook deliveries) stay.
fn default_log_filter(demo: bool, verbose: u8) -> &'static str {
    match verbose {
        0 if demo => "shipment_server=info,tower_http=warn",
        0 | 1 => "shipment_server=info,tower_http=info",
        _ => "shipment_server=debug,tower_http=debug",
    }
}

/// How long `healthcheck` waits for `/readyz` to answer, connecting
/// included, before it calls the server unhealthy: below the image's
/// HEALTHCHECK `--timeout` (5 s), so the check reports why it failed rather
/// than being killed.
const HEALTHCHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// `healthcheck`: `GET /readyz` on the address `serve` was given.
async fn healthcheck(addr: SocketAddr) -> anyhow::Result<()> {
    let url = readyz_url(addr)?;
    // reqwest is built without a TLS provider of its own (the workspace's
    // `reqwest`) and wants one to build a client, even for plain HTTP.
    shipment_server::harness::install_tls_provider();
    let client = reqwest::Client::builder()
        .timeout(HEALTHCHECK_TIMEOUT)
        // A proxy from the container's environment must not answer for
        // the server beside it.
        .no_proxy()
        .build()
        .context("cannot build an HTTP client")?;
    let response = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("{url}: no answer"))?;
    let status = response.status();
    anyhow::ensure!(status.is_success(), "{url} answered {status}");
    println!("{url} answered {status}");
    Ok(())
}

/// The address of the server that is PID 1, as its command line and this
/// environment give it: in the container image the server is PID 1,
/// started with the arguments `docker run` gave after the image, and Docker
/// runs the HEALTHCHECK with the container's environment but without those
/// arguments (`serve --addr 0.0.0.0:9090` would leave it asking 8080).
/// `None` when PID 1 is not `shipment-server serve` (outside a container).
fn served_by_pid_1() -> Option<SocketAddr> {
    let raw = std::fs::read("/proc/1/cmdline").ok()?;
    let args: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    serve_addr(&args)
}

/// The address `args` (a whole command line) would serve on, if it is
/// `shipment-server serve`.
fn serve_addr(args: &[String]) -> Option<SocketAddr> {
    let program = std::path::Path::new(args.first()?).file_name()?;
    if program != "shipment-server" {
        return None;
    }
    match Cli::try_parse_from(args).ok()?.command {
        Command::Serve(config) => Some(config.addr),
        _ => None,
    }
}

/// Where `healthcheck` asks: the server's own address, its loopback when it
/// listens on every interface (`0.0.0.0`, `::`).
fn readyz_url(addr: SocketAddr) -> anyhow::Result<String> {
    anyhow::ensure!(
        addr.port() != 0,
        "the address {addr} has port 0 (a free port picked at start): give the port the server listens on with --addr or SHIPMENT_ADDR"
    );
    let ip: IpAddr = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(ip) if ip.is_unspecified() => Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    Ok(format!(
        "http://{}/readyz",
        SocketAddr::new(ip, addr.port())
    ))
}

#[allow(clippy::print_stdout)]
fn print_demo(base: &str, dashboard: &str, d: &admin::DemoAccount) {
    println!(
        r#"
Shipment service demo is running.

  API base URL     {base}
  Dashboard        {dashboard}   (sign in in a browser)
  Merchant API key {api_key}
  Courier key      {courier_key}   (courier company {courier}, driver {driver})
  Merchant sign-in {email} / {password}

Try it (copy and paste):

  export BASE={base} KEY={api_key} CK={courier_key}
  curl -s $BASE/merchant-couriers -H "X-API-KEY: $KEY"
  CODE=$(curl -s $BASE/shipments -H "X-API-KEY: $KEY" -H 'Content-Type: application/json' \
       -d '{{"courier_company_id": {courier}, "weight_kg": 2.5, "items": ["book"], "start_address": "52.5200,13.4050", "end_address": "52.3759,4.8975"}}' \
       | grep -o 'SHP-[0-9A-Z]\{{4\}}-[0-9A-Z]\{{4\}}' | head -1); echo $CODE
  curl -s $BASE/shipments/$CODE -H "X-API-KEY: $KEY"
  curl -s -X POST $BASE/courier/shipments/$CODE/assign-driver -H "X-API-KEY: $CK" -H 'Content-Type: application/json' -d '{{"driver_id": {driver}}}'
  curl -s -X POST $BASE/courier/shipments/$CODE/pickup  -H "X-API-KEY: $CK"
  curl -s -X POST $BASE/courier/shipments/$CODE/deliver -H "X-API-KEY: $CK"
  curl -s -X POST $BASE/shipments/$CODE/rate -H "X-API-KEY: $KEY" -H 'Content-Type: application/json' -d '{{"rating": 9}}'
  curl -s "$BASE/shipments?status=delivered" -H "X-API-KEY: $KEY"

Dashboard API (Bearer token from a sign-in):

  TOKEN=$(curl -s $BASE/auth/login -H 'Content-Type: application/json' \
       -d '{{"email": "{email}", "password": "{password}"}}' | grep -o '"token":"[^"]*"' | cut -d'"' -f4)
  curl -s $BASE/api-keys -H "Authorization: Bearer $TOKEN"
  curl -s -X POST $BASE/webhooks -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
       -d '{{"url": "https://localhost:3000/webhooks/shipments"}}'

Stop with Ctrl-C.
"#,
        api_key = d.api_key,
        courier_key = d.courier_key,
        courier = d.courier_id,
        driver = d.driver_id,
        email = d.email,
        password = d.password,
    );
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command, default_log_filter, readyz_url, serve_addr};

    /// The filter `args` would log with when `RUST_LOG` is not set.
    fn filter_of(args: &[&str]) -> &'static str {
        let cli = Cli::try_parse_from(args).unwrap();
        default_log_filter(matches!(cli.command, Command::Demo { .. }), cli.verbose)
    }

    #[test]
    fn the_demo_logs_requests_only_when_asked() {
        assert_eq!(
            filter_of(&["shipment-server", "demo", "--simulate"]),
            "shipment_server=info,tower_http=warn"
        );
        for verbose in [
            &["shipment-server", "demo", "--simulate", "-v"][..],
            &["shipment-server", "-v", "demo"],
            &["shipment-server", "demo", "--verbose"],
        ] {
            assert_eq!(
                filter_of(verbose),
                "shipment_server=info,tower_http=info",
                "{verbose:?}"
            );
        }
        assert_eq!(
            filter_of(&["shipment-server", "demo", "-vv"]),
            "shipment_server=debug,tower_http=debug"
        );
    }

    #[test]
    fn a_server_logs_every_request_as_before() {
        assert_eq!(
            filter_of(&["shipment-server", "serve"]),
            "shipment_server=info,tower_http=info"
        );
        assert_eq!(
            filter_of(&["shipment-server", "serve", "-v"]),
            "shipment_server=info,tower_http=info"
        );
        assert_eq!(
            filter_of(&["shipment-server", "migrate", "-vv"]),
            "shipment_server=debug,tower_http=debug"
        );
    }

    #[test]
    fn the_healthcheck_asks_where_serve_listens() {
        let url_of = |args: &[&str]| {
            let Command::Healthcheck(config) = Cli::try_parse_from(args).unwrap().command else {
                panic!("{args:?} is no healthcheck");
            };
            readyz_url(config.addr).map_err(|e| e.to_string())
        };
        let ok = |url: &str| Ok(url.to_owned());
        assert_eq!(
            url_of(&["shipment-server", "healthcheck"]),
            ok("http://127.0.0.1:8080/readyz")
        );
        assert_eq!(
            url_of(&["shipment-server", "healthcheck", "--addr", "0.0.0.0:9090"]),
            ok("http://127.0.0.1:9090/readyz")
        );
        assert_eq!(
            url_of(&["shipment-server", "healthcheck", "--addr", "[::]:8080"]),
            ok("http://[::1]:8080/readyz")
        );
        assert_eq!(
            url_of(&["shipment-server", "healthcheck", "--addr", "10.1.2.3:80"]),
            ok("http://10.1.2.3:80/readyz")
        );
        // Every `serve` flag is accepted, so a HEALTHCHECK can repeat them.
        assert_eq!(
            url_of(&[
                "shipment-server",
                "healthcheck",
                "--test-controls",
                "--database-url",
                "sqlite::memory:",
                "--addr",
                "0.0.0.0:7000",
            ]),
            ok("http://127.0.0.1:7000/readyz")
        );
        // The image's PID 1, whose arguments the HEALTHCHECK does not get.
        let line =
            |args: &[&str]| serve_addr(&args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>());
        assert_eq!(
            line(&[
                "/usr/local/bin/shipment-server",
                "serve",
                "--test-controls",
                "--addr",
                "0.0.0.0:9191"
            ]),
            Some(([0, 0, 0, 0], 9191).into())
        );
        assert_eq!(line(&["/usr/local/bin/shipment-server", "demo"]), None);
        assert_eq!(line(&["/sbin/init", "serve", "--addr", "0.0.0.0:1"]), None);
        assert_eq!(line(&["shipment-server", "serve", "--no-such-flag"]), None);
        let zero = url_of(&["shipment-server", "healthcheck", "--addr", "127.0.0.1:0"]);
        assert!(zero.unwrap_err().contains("port 0"));
    }
}
