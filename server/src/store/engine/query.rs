//! One statement for both engines: [`Query`] binds its arguments for the
//! engine the store holds and runs on its pool or on an open transaction.
//!
//! Why not functions generic over `sqlx::Database`: such a function has to
//! restate `for<'q> i64: Encode<'q, DB> + Type<DB>` for every type it binds
//! or reads, because Rust does not carry a trait's `where` clauses to the
//! trait's users (a `trait Engine: Database where …` gathers nothing). Bounds
//! on the values and rows themselves are carried, as supertraits: [`Value`]
//! and [`Record`] say "both engines take this", once, and the engine is
//! chosen by one `match` per way of running a statement, below. (sqlx's
//! `Any` driver dispatches at run time too, but binds and decodes no
//! `chrono` types, and the store's variants hold the engines' own pools.)

use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{
    Arguments, Encode, FromRow, PgConnection, PgPool, Postgres, Sqlite, SqliteConnection,
    SqlitePool, Type,
};

use super::backend::Backend;
use super::db::{Db, Pool};
use super::reach::Reach;
use super::tx::{Tx, TxConn};
use crate::store::error::StoreError;

/// A value both engines can bind (`i64`, `&str`, `DateTime<Utc>`, their
/// `Option`s, …). `'v` is the value's own borrow: the engines copy it into
/// their arguments, so it need not outlive the query.
pub(crate) trait Value<'v>:
    Encode<'v, Sqlite> + Type<Sqlite> + Encode<'v, Postgres> + Type<Postgres> + Send
{
}

impl<'v, T> Value<'v> for T where
    T: Encode<'v, Sqlite> + Type<Sqlite> + Encode<'v, Postgres> + Type<Postgres> + Send
{
}

/// A row both engines can read: a `#[derive(sqlx::FromRow)]` struct, or a
/// one-element tuple for [`Query::scalar`] and its kin.
pub(crate) trait Record:
    for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{
}

impl<T> Record for T where
    T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{
}

/// Where a statement runs, with its arguments encoded for that engine.
enum On<'c> {
    SqlitePool(&'c SqlitePool, SqliteArguments),
    SqliteTx(&'c mut SqliteConnection, SqliteArguments),
    /// With the pool's [`Reach`], which its connection is taken through.
    PgPool(&'c PgPool, Option<&'c Reach>, PgArguments),
    PgTx(&'c mut PgConnection, PgArguments),
}

/// `$run` with `$ex` (the pool or a connection) and `$a` (the arguments)
/// taken from an [`On`]: spelled once, typed four times, as each engine's
/// executor and arguments are types of their own. On PostgreSQL's pool the
/// connection is taken first, through [`Reach`], so that a database known
/// to be unreachable fails the statement at once.
macro_rules! on_engine {
    ($on:expr, |$ex:ident, $a:ident| $run:expr) => {
        match $on {
            On::SqlitePool($ex, $a) => $run,
            On::SqliteTx($ex, $a) => $run,
            On::PgPool(pool, reach, $a) => {
                let mut conn = match reach {
                    Some(reach) => reach.acquire(pool).await?,
                    None => pool.acquire().await?,
                };
                let $ex = &mut *conn;
                $run
            }
            On::PgTx($ex, $a) => $run,
        }
    };
}

/// A statement with its arguments, bound to the store's pool or to a
/// transaction; nothing runs until one of the `fetch…`/`execute` methods.
#[must_use = "a query does nothing until it is run"]
pub(crate) struct Query<'c> {
    sql: &'static str,
    on: On<'c>,
    /// The first argument that failed to encode, reported when the query
    /// runs (as sqlx's own `bind` does).
    unbound: Option<BoxDynError>,
    /// Prepared once per connection and kept (sqlx's statement cache), or
    /// prepared and planned each time it runs.
    persistent: bool,
}

/// A statement made at run time, in each engine's spelling of its
/// parameters: PostgreSQL's `$1, $2, …`, and for SQLite the same text with
/// each `$n` an anonymous `?` when the parameters appear once each, in
/// order (else SQLite takes the `$n` text too).
///
/// Why: SQLite names `$n` parameters, and sqlx asks each parameter's name
/// before binding it (`sqlite3_bind_parameter_name`), which walks the
/// statement's list of names: quadratic in a group's multi-row `INSERT` of
/// hundreds of parameters, which showed in profiles under `POST` load and
/// all but vanished with anonymous parameters (BENCHMARKS.md has today's
/// figures; docs/src/appendix/benchmarks-history.md, "One `Arc` per
/// request, mimalloc, anonymous parameters", the measurement). An anonymous
/// `?` has no name to look up.
#[derive(Debug)]
pub(crate) struct Sql {
    postgres: String,
    sqlite: String,
}

impl Sql {
    /// `text`, with parameters `$1`, `$2`, … .
    pub(crate) fn new(text: String) -> Sql {
        Sql {
            sqlite: anonymous(&text).unwrap_or_else(|| text.clone()),
            postgres: text,
        }
    }
}

/// `text` with each `$n` a `?`, if its parameters are `$1`, `$2`, … each
/// once, in that order (what a `?` means to SQLite); `None` otherwise.
fn anonymous(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut next = 1;
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - at - 1);
        if rest[at + 1..at + 1 + digits].parse::<usize>().ok()? != next {
            return None;
        }
        out.push('?');
        next += 1;
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    Some(out)
}

/// A statement's text: the same for both engines (`&'static str`), or made
/// for each ([`Sql`]).
pub(crate) trait Text {
    /// The text `backend` runs.
    fn on(self, backend: Backend) -> &'static str;
}

impl Text for &'static str {
    fn on(self, _: Backend) -> &'static str {
        self
    }
}

impl Text for &'static Sql {
    fn on(self, backend: Backend) -> &'static str {
        match backend {
            Backend::Sqlite => &self.sqlite,
            Backend::Postgres => &self.postgres,
        }
    }
}

/// `head` followed by `VALUES` lists of 1, 2, … `rows` rows, then `tail`:
/// statement `n - 1` writes `n` rows, each of them `row` with its `?`s
/// numbered on (`"(?, 1, ?)"`: `($1, 1, $2), ($3, 1, $4)`), so a row's
/// parameters are bound in the order they appear. Made once into a
/// `static` (a [`Query`] takes `&'static` text); each size is a statement
/// of its own to the engines' statement caches.
pub(crate) fn multi_row(head: &str, rows: usize, row: &str, tail: &str) -> Vec<Sql> {
    let mut sql = format!("{head} VALUES ");
    let mut all = Vec::with_capacity(rows);
    let mut next = 1;
    for n in 0..rows {
        if n > 0 {
            sql.push_str(", ");
        }
        for (i, part) in row.split('?').enumerate() {
            if i > 0 {
                sql.push_str(&format!("${next}"));
                next += 1;
            }
            sql.push_str(part);
        }
        all.push(Sql::new(format!("{sql}{tail}")));
    }
    all
}

/// A statement ending `head IN ($first, … $(first + n - 1))` for `n` = 1, 2,
/// 4, … up to the first power of two at or above `most`: a statement for
/// `k` values takes the next of these sizes, padded by repeating the last
/// value (`IN` takes a value twice as once), so the engines' statement
/// caches hold a few statements, not one per `k`. Made once into a
/// `static`.
pub(crate) struct PaddedIn(Vec<(usize, Sql)>);

impl PaddedIn {
    /// The statements for `head`, its `IN` list's parameters numbered from
    /// `first`, for up to `most` values.
    pub(crate) fn new(head: &str, first: usize, most: usize) -> PaddedIn {
        let sizes = std::iter::successors(Some(1usize), |n| (*n < most).then(|| n * 2));
        PaddedIn(
            sizes
                .map(|n| {
                    let params: Vec<String> = (first..first + n).map(|p| format!("${p}")).collect();
                    (n, Sql::new(format!("{head} IN ({})", params.join(", "))))
                })
                .collect(),
        )
    }

    /// The statement for `values` (1 to `most` of them), begun by `start`
    /// (which binds the parameters before the `IN` list), with `values`
    /// bound, padded.
    pub(crate) fn query<'c, 'v, V: Value<'v> + Copy>(
        &'static self,
        start: impl FnOnce(&'static Sql) -> Query<'c>,
        values: &[V],
    ) -> Result<Query<'c>, StoreError> {
        let fits = self.0.iter().find(|(n, _)| *n >= values.len());
        let (Some((size, sql)), Some(&last)) = (fits, values.last()) else {
            let most = self.0.last().map_or(0, |(n, _)| *n);
            return Err(StoreError::Corrupt(format!(
                "{} values for one IN list; 1 to {most}",
                values.len()
            )));
        };
        let mut query = start(sql);
        for n in 0..*size {
            query = query.bind(values.get(n).copied().unwrap_or(last));
        }
        Ok(query)
    }
}

impl Db {
    /// `sql` on the pool, for the tasks that hold the [`Db`].
    pub(crate) fn query(&self, sql: impl Text) -> Query<'_> {
        let sql = sql.on(self.backend());
        let on = match self.pool() {
            Pool::Sqlite(pool) => On::SqlitePool(pool, SqliteArguments::default()),
            Pool::Postgres(pool) => On::PgPool(pool, self.reach(), PgArguments::default()),
        };
        Query::new(sql, on)
    }
}

impl Tx {
    /// `sql` inside this transaction.
    pub(crate) fn query(&mut self, sql: impl Text) -> Query<'_> {
        let sql = sql.on(self.backend());
        let on = match &mut self.conn {
            TxConn::Sqlite(tx) => On::SqliteTx(tx, SqliteArguments::default()),
            TxConn::Postgres(tx) => On::PgTx(tx, PgArguments::default()),
        };
        Query::new(sql, on)
    }
}

impl<'c> Query<'c> {
    fn new(sql: &'static str, on: On<'c>) -> Query<'c> {
        Query {
            sql,
            on,
            unbound: None,
            persistent: true,
        }
    }

    /// Prepares and plans the statement each time it runs, instead of
    /// keeping it prepared on the connection.
    ///
    /// Why: PostgreSQL switches a kept statement to a generic plan after
    /// five runs, and keeps that plan until the table's statistics change.
    /// A plan made while a table was nearly empty can be a sequential scan
    /// that turns quadratic once a burst has filled the table (the
    /// dispatcher's claim, docs/src/appendix/benchmarks-history.md,
    /// "Claims planned afresh on PostgreSQL"). Planned each time, it sees the table's current size.
    pub(crate) fn planned_each_time(mut self) -> Self {
        self.persistent = false;
        self
    }

    /// Binds the next parameter (`$1`, then `$2`, …).
    pub(crate) fn bind<'v>(mut self, value: impl Value<'v>) -> Self {
        let added = match &mut self.on {
            On::SqlitePool(_, args) | On::SqliteTx(_, args) => Arguments::add(args, value),
            On::PgPool(_, _, args) | On::PgTx(_, args) => Arguments::add(args, value),
        };
        if let Err(e) = added {
            self.unbound.get_or_insert(e);
        }
        self
    }

    fn ready(self) -> sqlx::Result<(&'static str, On<'c>, bool)> {
        match self.unbound {
            Some(e) => Err(sqlx::Error::Encode(e)),
            None => Ok((self.sql, self.on, self.persistent)),
        }
    }

    /// Runs a statement that returns no rows; how many rows it touched.
    pub(crate) async fn execute(self) -> sqlx::Result<u64> {
        let (sql, on, kept) = self.ready()?;
        let done = on_engine!(on, |ex, a| sqlx::query_with(sql, a)
            .persistent(kept)
            .execute(ex)
            .await?
            .rows_affected());
        Ok(done)
    }

    /// The one row; [`sqlx::Error::RowNotFound`] if there is none.
    pub(crate) async fn fetch_one<R: Record>(self) -> sqlx::Result<R> {
        let (sql, on, kept) = self.ready()?;
        on_engine!(on, |ex, a| sqlx::query_as_with(sql, a)
            .persistent(kept)
            .fetch_one(ex)
            .await)
    }

    /// The first row, if any.
    pub(crate) async fn fetch_optional<R: Record>(self) -> sqlx::Result<Option<R>> {
        let (sql, on, kept) = self.ready()?;
        on_engine!(on, |ex, a| sqlx::query_as_with(sql, a)
            .persistent(kept)
            .fetch_optional(ex)
            .await)
    }

    /// Every row.
    pub(crate) async fn fetch_all<R: Record>(self) -> sqlx::Result<Vec<R>> {
        let (sql, on, kept) = self.ready()?;
        on_engine!(on, |ex, a| sqlx::query_as_with(sql, a)
            .persistent(kept)
            .fetch_all(ex)
            .await)
    }

    /// The first column of the one row (a count, a `RETURNING id`).
    pub(crate) async fn scalar<T>(self) -> sqlx::Result<T>
    where
        (T,): Record,
    {
        let (value,) = self.fetch_one::<(T,)>().await?;
        Ok(value)
    }

    /// The first column of the first row, if any.
    pub(crate) async fn scalar_optional<T>(self) -> sqlx::Result<Option<T>>
    where
        (T,): Record,
    {
        Ok(self.fetch_optional::<(T,)>().await?.map(|(value,)| value))
    }

    /// The first column of every row.
    pub(crate) async fn scalars<T>(self) -> sqlx::Result<Vec<T>>
    where
        (T,): Record,
    {
        let rows = self.fetch_all::<(T,)>().await?;
        Ok(rows.into_iter().map(|(value,)| value).collect())
    }
}

#[cfg(test)]
mod tests {
    /// Each size's length and its text for both engines.
    fn texts(sql: &super::PaddedIn) -> Vec<(usize, &str, &str)> {
        (sql.0.iter())
            .map(|(n, s)| (*n, s.postgres.as_str(), s.sqlite.as_str()))
            .collect()
    }

    #[test]
    fn padded_in_doubles_up_to_the_most() {
        let sql = super::PaddedIn::new("SELECT * FROM t WHERE id", 1, 3);
        assert_eq!(
            texts(&sql),
            [
                (
                    1,
                    "SELECT * FROM t WHERE id IN ($1)",
                    "SELECT * FROM t WHERE id IN (?)"
                ),
                (
                    2,
                    "SELECT * FROM t WHERE id IN ($1, $2)",
                    "SELECT * FROM t WHERE id IN (?, ?)"
                ),
                (
                    4,
                    "SELECT * FROM t WHERE id IN ($1, $2, $3, $4)",
                    "SELECT * FROM t WHERE id IN (?, ?, ?, ?)"
                ),
            ]
        );
        let sql = super::PaddedIn::new("UPDATE t SET a = $1 WHERE id", 2, 2);
        assert_eq!(
            texts(&sql)[1],
            (
                2,
                "UPDATE t SET a = $1 WHERE id IN ($2, $3)",
                "UPDATE t SET a = ? WHERE id IN (?, ?)"
            )
        );
    }

    #[test]
    fn multi_row_numbers_each_rows_parameters_on() {
        let sql = super::multi_row("INSERT INTO t (a, b, c)", 2, "(?, 1, ?)", " RETURNING id");
        let postgres: Vec<_> = sql.iter().map(|s| s.postgres.as_str()).collect();
        assert_eq!(
            postgres,
            [
                "INSERT INTO t (a, b, c) VALUES ($1, 1, $2) RETURNING id",
                "INSERT INTO t (a, b, c) VALUES ($1, 1, $2), ($3, 1, $4) RETURNING id",
            ]
        );
        assert_eq!(
            sql[1].sqlite,
            "INSERT INTO t (a, b, c) VALUES (?, 1, ?), (?, 1, ?) RETURNING id"
        );
    }

    #[test]
    fn sqlite_takes_anonymous_parameters_only_when_each_is_once_in_order() {
        let anonymous = |text: &str| super::anonymous(text);
        assert_eq!(
            anonymous("SELECT $1, $2, $10 FROM t").as_deref(),
            None,
            "$10 is not the third"
        );
        assert_eq!(
            anonymous("UPDATE t SET a = $1, b = $2 WHERE c = $3").as_deref(),
            Some("UPDATE t SET a = ?, b = ? WHERE c = ?")
        );
        assert_eq!(anonymous("SELECT $2, $1").as_deref(), None);
        assert_eq!(anonymous("SELECT 1").as_deref(), Some("SELECT 1"));
        let long: Vec<String> = (1..=12).map(|n| format!("${n}")).collect();
        assert_eq!(
            anonymous(&long.join(",")).as_deref(),
            Some(["?"; 12].join(",").as_str())
        );
    }
}
