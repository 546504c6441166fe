//! Fresh databases: a SQLite file in a temporary directory, or a PostgreSQL
//! database of its own, removed when the test ends, also when it panics.

/// The environment variable naming the PostgreSQL server for tests, as an
/// administrator URL (`postgres://postgres@127.0.0.1:5432/postgres`).
pub const TEST_DATABASE_URL: &str = "TEST_DATABASE_URL";

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    /// A SQLite file in a temporary directory.
    Sqlite,
    /// A database of its own on the server named by `TEST_DATABASE_URL`.
    Postgres,
}

impl Db {
    /// PostgreSQL when `TEST_DATABASE_URL` is set, SQLite otherwise.
    pub fn from_env() -> Db {
        if std::env::var_os(TEST_DATABASE_URL).is_some_and(|v| !v.is_empty()) {
            Db::Postgres
        } else {
            Db::Sqlite
        }
    }
}

/// A new, empty database (no migrations run yet). Dropping it removes it: a
/// SQLite file goes with its directory, a PostgreSQL database is dropped
/// (`WITH (FORCE)`, so open connections do not keep it alive).
/// [`FreshDb::drop_database`] does the same from async code.
pub struct FreshDb {
    /// The database URL, for [`Config::local`](shipment_server::Config::local)
    /// or `Store::connect`.
    pub url: String,
    cleanup: Option<Cleanup>,
}

enum Cleanup {
    /// Deleted with the directory when dropped.
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres {
        admin_url: String,
        name: String,
    },
}

impl FreshDb {
    /// Creates one; `None` (after printing `SKIPPED (PostgreSQL)` on stderr)
    /// when PostgreSQL is asked for and `TEST_DATABASE_URL` is not set.
    ///
    /// # Panics
    ///
    /// When the PostgreSQL server cannot be reached or refuses `CREATE
    /// DATABASE`.
    pub async fn create(db: Db) -> Option<FreshDb> {
        let (url, cleanup) = match db {
            Db::Sqlite => {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let url = format!("sqlite://{}", dir.path().join("test.db").display());
                (url, Cleanup::Sqlite(dir))
            }
            Db::Postgres => {
                let Ok(admin_url) = std::env::var(TEST_DATABASE_URL) else {
                    eprintln!("SKIPPED (PostgreSQL): {TEST_DATABASE_URL} is not set");
                    return None;
                };
                let name = format!("shipments_test_{}", uuid::Uuid::new_v4().simple());
                admin_sql(&admin_url, &format!("CREATE DATABASE {name}")).await;
                let url = with_database(&admin_url, &name);
                (url, Cleanup::Postgres { admin_url, name })
            }
        };
        Some(FreshDb {
            url,
            cleanup: Some(cleanup),
        })
    }

    /// Removes the database now (what dropping it does, without blocking a
    /// thread of the runtime).
    pub async fn drop_database(mut self) {
        if let Some(Cleanup::Postgres { admin_url, name }) = self.cleanup.take() {
            admin_sql(&admin_url, &drop_statement(&name)).await;
        }
    }
}

impl Drop for FreshDb {
    /// The path of a test that panicked (or never called
    /// [`FreshDb::drop_database`]): a future cannot be blocked on inside the
    /// test's runtime, so the `DROP DATABASE` runs on a thread with a runtime
    /// of its own.
    fn drop(&mut self) {
        if let Some(Cleanup::Postgres { admin_url, name }) = self.cleanup.take() {
            let _ = std::thread::spawn(move || {
                if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    runtime.block_on(admin_sql(&admin_url, &drop_statement(&name)));
                }
            })
            .join();
        }
    }
}

fn drop_statement(name: &str) -> String {
    format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")
}

/// Runs one statement on the PostgreSQL server of `admin_url`.
async fn admin_sql(admin_url: &str, sql: &str) {
    let admin = sqlx::PgPool::connect(admin_url)
        .await
        .unwrap_or_else(|e| panic!("{TEST_DATABASE_URL} must be reachable: {e}"));
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&admin)
        .await
        .unwrap_or_else(|e| panic!("`{sql}` failed: {e}"));
    admin.close().await;
}

/// `url` with its database name replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let mut u = url::Url::parse(url).expect("TEST_DATABASE_URL is a URL");
    u.set_path(&format!("/{name}"));
    u.to_string()
}
