//! [`PgStore`]: PostgreSQL 13 or later, shared by any number of chatctx instances.
//!
//! Two tables: `chatctx_ops` (every operation, keyed by chat and position) and `chatctx_chats` (each chat's
//! newest position). Every write is one statement, or one transaction when it spans chats, and uses only
//! portable SQL (no extensions, no LISTEN/NOTIFY, no advisory locks), with unnamed statements only, so the
//! store works through PgBouncer in transaction mode and on PostgreSQL-compatible distributed databases.
//!
//! [`Store::append_at`] is the one point of coordination between instances: it bumps the chat's head only if
//! it is still the one the writer saw, in the same statement that inserts the operations, so two instances
//! can never both append at one position, and a chat's operations become visible in position order.
//!
//! The store is synchronous like the others: it owns a small tokio runtime that drives the connections, and
//! each call blocks its thread until the database answers (callers run it off their async threads).

use std::pin::pin;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use futures_util::TryStreamExt;
use tokio_postgres::NoTls;
use tokio_postgres::config::SslMode;
use tokio_postgres::types::{ToSql, Type};

use crate::{BoxFuture, Heads, Log, Op, SharedLog, Store, StoreError, by_chat};

/// Versioned migrations, applied in order on start; `chatctx_schema` records the applied ones. Never edit one
/// that has shipped: add the next.
/// How long a readiness ping waits for the database.
const PING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        "CREATE TABLE chatctx_chats (
         channel TEXT NOT NULL,
         chat_id TEXT NOT NULL,
         head BIGINT NOT NULL,
         PRIMARY KEY (channel, chat_id)
     );
     CREATE TABLE chatctx_ops (
         channel TEXT NOT NULL,
         chat_id TEXT NOT NULL,
         pos BIGINT NOT NULL,
         line TEXT NOT NULL,
         PRIMARY KEY (channel, chat_id, pos)
     );",
    ),
    (
        2,
        "CREATE TABLE chatctx_externals (
             external_id TEXT PRIMARY KEY,
             channel TEXT NOT NULL,
             chat_id TEXT NOT NULL
         );
         CREATE INDEX chatctx_externals_by_chat ON chatctx_externals (channel, chat_id);",
    ),
    (3, "CREATE TABLE chatctx_revoked_scopes (id TEXT PRIMARY KEY, until BIGINT NOT NULL);"),
    // Revocations numbered as written, so instances read only the new ones.
    (
        4,
        "ALTER TABLE chatctx_revoked_scopes ADD COLUMN seq BIGSERIAL;
         CREATE INDEX chatctx_revoked_by_seq ON chatctx_revoked_scopes (seq);",
    ),
];

/// Bumps a chat's head by `$3` (creating the chat), returning the new head.
const BUMP: &str = "INSERT INTO chatctx_chats (channel, chat_id, head) VALUES ($1, $2, $3)
     ON CONFLICT (channel, chat_id) DO UPDATE SET head = chatctx_chats.head + EXCLUDED.head RETURNING head";

/// Inserts the lines `$4` at positions `$3 + 1 ..`.
const INSERT: &str = "INSERT INTO chatctx_ops (channel, chat_id, pos, line)
     SELECT $1, $2, $3 + o.n, o.line FROM unnest($4::text[]) WITH ORDINALITY AS o(line, n)";

/// [`Store::append_at`] in one statement: the head moves from `$3` only if it is still `$3` (the conflict
/// path locks the row and re-checks), and the lines are inserted only if it moved. Returns one row per line.
const APPEND_AT: &str = "WITH bump AS (
         INSERT INTO chatctx_chats (channel, chat_id, head) VALUES ($1, $2, $3 + cardinality($4::text[]))
         ON CONFLICT (channel, chat_id) DO UPDATE SET head = EXCLUDED.head WHERE chatctx_chats.head = $3
         RETURNING head)
     INSERT INTO chatctx_ops (channel, chat_id, pos, line)
     SELECT $1, $2, $3 + o.n, o.line FROM bump, unnest($4::text[]) WITH ORDINALITY AS o(line, n)
     RETURNING pos";

/// [`SharedLog::heads_async`]: the head of each chat `($1[i], $2[i])`, numbered from 1 as asked; a chat never
/// written has no row.
const HEADS: &str = "SELECT k.i, c.head
     FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(channel, chat_id, i)
     JOIN chatctx_chats c ON c.channel = k.channel AND c.chat_id = k.chat_id";

/// PostgreSQL, through a pool of connections.
pub struct PgStore {
    rt: Option<tokio::runtime::Runtime>,
    pool: Pool,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgStore")
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which tokio forbids on async threads; letting it go in the background
        // only stops the idle connection tasks.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// TLS for `sslmode=require`: rustls (ring) checking the server's certificate and host name against the
/// system's trusted roots (`SSL_CERT_FILE` / `SSL_CERT_DIR` add or replace them, e.g. for a private CA).
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_platform_verifier())
        .map_err(|e| StoreError::Postgres(format!("TLS: {e}")))?
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

fn pg(e: impl std::fmt::Display) -> StoreError {
    StoreError::Postgres(e.to_string())
}

/// A database error with PostgreSQL's own message, which `tokio_postgres::Error` keeps in its source.
fn db(e: tokio_postgres::Error) -> StoreError {
    if let Some(d) = e.as_db_error() {
        return StoreError::Postgres(format!("{}: {}", d.code().code(), d.message()));
    }
    // Connection and TLS failures keep their cause (an untrusted certificate, a refused connection) below.
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    StoreError::Postgres(message)
}

/// A connection from `pool`.
async fn client(pool: &Pool) -> Result<deadpool_postgres::Object, StoreError> {
    pool.get().await.map_err(|e| match e {
        deadpool_postgres::PoolError::Backend(e) => db(e),
        e => pg(e),
    })
}

fn pos(v: i64) -> u64 {
    v.max(0) as u64
}

impl PgStore {
    /// Connects to `url` (a libpq-style `postgres://` URL), with at most `pool_size` connections, and applies
    /// the migrations not yet applied.
    pub fn open(url: &str, pool_size: usize) -> Result<Self, StoreError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(db)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("chatctx");
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("chatctx-postgres")
            .enable_all()
            .build()
            .map_err(pg)?;
        let recycling = ManagerConfig { recycling_method: RecyclingMethod::Fast };
        let manager = match config.get_ssl_mode() {
            SslMode::Require => Manager::from_config(config, tls()?, recycling),
            // `prefer` (libpq's default) would try TLS and fail on an untrusted certificate instead of falling
            // back: without `sslmode=require`, connections are plain.
            _ => Manager::from_config(config.ssl_mode(SslMode::Disable).clone(), NoTls, recycling),
        };
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(std::time::Duration::from_secs(10)))
            .wait_timeout(Some(std::time::Duration::from_secs(30)))
            .build()
            .map_err(pg)?;
        let store = Self { rt: Some(rt), pool };
        store.block(store.migrate())?;
        Ok(store)
    }

    fn block<T>(&self, f: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
        match &self.rt {
            Some(rt) => rt.block_on(f),
            None => Err(StoreError::Postgres("the store is closed".to_owned())),
        }
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        client(&self.pool).await
    }

    /// Applies each migration not yet recorded, in its own transaction. Instances starting together are
    /// safe: the second to insert a version's row waits for the first to commit, then skips it.
    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let create = "CREATE TABLE IF NOT EXISTS chatctx_schema (
                          version INTEGER PRIMARY KEY,
                          applied_at TIMESTAMPTZ NOT NULL DEFAULT now())";
        // Two first starts at once can both try to create the table; one of them fails and tries again.
        if client.batch_execute(create).await.is_err() {
            client.batch_execute(create).await.map_err(db)?;
        }
        let newest: Option<i32> = client
            .query_typed("SELECT max(version) FROM chatctx_schema", &[])
            .await
            .map_err(db)?
            .first()
            .and_then(|r| r.get(0));
        let known = MIGRATIONS.iter().map(|(v, _)| *v).max().unwrap_or(0);
        if let Some(v) = newest.filter(|v| *v > known) {
            return Err(StoreError::Damaged(format!(
                "the database was written by a newer chatctx (schema version {v}; this one knows {known}): run \
                 that version, or a newer one"
            )));
        }
        for (version, sql) in MIGRATIONS {
            let tx = client.transaction().await.map_err(db)?;
            let claimed = tx
                .execute_typed(
                    "INSERT INTO chatctx_schema (version) VALUES ($1) ON CONFLICT (version) DO NOTHING",
                    &[(version, Type::INT4)],
                )
                .await
                .map_err(db)?;
            if claimed == 1 {
                tx.batch_execute(sql).await.map_err(db)?;
            }
            tx.commit().await.map_err(db)?;
        }
        Ok(())
    }

    /// The schema versions applied, in order.
    pub fn schema_versions(&self) -> Result<Vec<i32>, StoreError> {
        self.block(async {
            let rows = self
                .client()
                .await?
                .query_typed("SELECT version FROM chatctx_schema ORDER BY version", &[])
                .await
                .map_err(db)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }
}

impl PgStore {
    /// The catch-up read, usable from any tokio runtime.
    async fn since_rows(&self, channel: &str, chat_id: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        let client = self.client().await?;
        let after = after as i64;
        let rows = client
            .query_typed(
                "SELECT pos, line FROM chatctx_ops WHERE channel = $1 AND chat_id = $2 AND pos > $3 ORDER BY pos",
                &[(&channel, Type::TEXT), (&chat_id, Type::TEXT), (&after, Type::INT8)],
            )
            .await
            .map_err(db)?;
        Ok(rows.iter().map(|r| (pos(r.get(0)), r.get(1))).collect())
    }
}

/// Inside `tx`: appends `lines` to a chat at its next positions.
async fn push(
    tx: &tokio_postgres::Transaction<'_>,
    channel: &str,
    chat: &str,
    lines: &[&str],
) -> Result<(), StoreError> {
    if lines.is_empty() {
        return Ok(());
    }
    let n = lines.len() as i64;
    let head: i64 = tx
        .query_typed_one(BUMP, &[(&channel, Type::TEXT), (&chat, Type::TEXT), (&n, Type::INT8)])
        .await
        .map_err(db)?
        .get(0);
    let params: [(&(dyn ToSql + Sync), Type); 4] =
        [(&channel, Type::TEXT), (&chat, Type::TEXT), (&(head - n), Type::INT8), (&lines, Type::TEXT_ARRAY)];
    tx.execute_typed(INSERT, &params).await.map_err(db)?;
    Ok(())
}

const DELETE: &str = "DELETE FROM chatctx_ops WHERE channel = $1 AND chat_id = $2";

impl Store for PgStore {
    fn revoke_scope(&self, id: &str, until: i64) -> Result<(), StoreError> {
        self.block(async {
            let client = self.client().await?;
            let sql = "INSERT INTO chatctx_revoked_scopes (id, until) VALUES ($1, $2)
                       ON CONFLICT (id) DO UPDATE SET until = EXCLUDED.until,
                           seq = nextval(pg_get_serial_sequence('chatctx_revoked_scopes', 'seq'))";
            let params: [(&(dyn ToSql + Sync), Type); 2] = [(&id, Type::TEXT), (&until, Type::INT8)];
            client.execute_typed(sql, &params).await.map_err(db)?;
            Ok(())
        })
    }

    fn revoked_scopes(&self, now: i64) -> Result<Vec<(String, i64)>, StoreError> {
        self.block(async {
            let client = self.client().await?;
            let sql = "SELECT id, until FROM chatctx_revoked_scopes WHERE until > $1";
            let params: [(&(dyn ToSql + Sync), Type); 1] = [(&now, Type::INT8)];
            let rows = client.query_typed(sql, &params).await.map_err(db)?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn revoked_since(&self, now: i64, after: u64) -> Result<(Vec<(String, i64)>, u64), StoreError> {
        self.block(async {
            let client = self.client().await?;
            // Several writers: a number may commit after a higher one was read. The caller reads everything
            // again now and then (`chatctx serve`: every 30 s), which bounds how late such a one is seen.
            let sql = "SELECT id, until, seq FROM chatctx_revoked_scopes WHERE (seq > $1 OR $1 = 0) AND until > $2";
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let params: [(&(dyn ToSql + Sync), Type); 2] = [(&after, Type::INT8), (&now, Type::INT8)];
            let rows = client.query_typed(sql, &params).await.map_err(db)?;
            let newest = rows.iter().map(|r| r.get::<_, i64>(2)).max().map_or(after, |n| n.max(after));
            Ok((rows.iter().map(|r| (r.get(0), r.get(1))).collect(), u64::try_from(newest).unwrap_or(0)))
        })
    }

    fn load(&self, each: &mut dyn FnMut(u64, Op)) -> Result<u64, StoreError> {
        self.block(async {
            let client = self.client().await?;
            let sql = "SELECT channel, chat_id, pos, line FROM chatctx_ops ORDER BY channel, chat_id, pos";
            let mut rows = pin!(client.query_typed_raw(sql, Vec::<(String, Type)>::new()).await.map_err(db)?);
            let mut n = 0;
            while let Some(row) = rows.try_next().await.map_err(db)? {
                each(pos(row.get(2)), Op { channel: row.get(0), chat_id: row.get(1), line: row.get(3) });
                n += 1;
            }
            Ok(n)
        })
    }

    fn ping(&self) -> Result<(), StoreError> {
        // Bounded: through a pooler whose server is gone, a query waits in its queue rather than fail, and a
        // readiness probe must answer "not ready" rather than hang.
        self.block(async {
            let ask = async {
                self.client().await?.simple_query("SELECT 1").await.map_err(db)?;
                Ok(())
            };
            match tokio::time::timeout(PING_TIMEOUT, ask).await {
                Ok(answer) => answer,
                Err(_) => Err(StoreError::Postgres(format!("the database did not answer within {PING_TIMEOUT:?}"))),
            }
        })
    }

    fn remove_op(&self, channel: &str, chat_id: &str, at: u64) -> Result<(), StoreError> {
        self.block(async {
            let sql = "DELETE FROM chatctx_ops WHERE channel = $1 AND chat_id = $2 AND pos = $3";
            let at = at as i64;
            let params: [(&(dyn ToSql + Sync), Type); 3] =
                [(&channel, Type::TEXT), (&chat_id, Type::TEXT), (&at, Type::INT8)];
            self.client().await?.execute_typed(sql, &params).await.map_err(db)?;
            Ok(())
        })
    }
}

impl Log for PgStore {
    fn load_chat(&self, channel: &str, chat_id: &str, each: &mut dyn FnMut(u64, String)) -> Result<(), StoreError> {
        SharedLog::since(self, channel, chat_id, 0, each)
    }

    fn append(&self, ops: &[Op]) -> Result<(), StoreError> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(db)?;
            // Chats in a fixed order, so two batches over the same chats cannot deadlock on their heads.
            let mut chats = by_chat(ops);
            chats.sort_by(|a, b| a.0.cmp(&b.0));
            for ((channel, chat), lines) in chats {
                push(&tx, channel, chat, &lines).await?;
            }
            tx.commit().await.map_err(db)
        })
    }

    fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<u64, StoreError> {
        self.block(async {
            let client = self.client().await?;
            client.execute_typed(DELETE, &[(&channel, Type::TEXT), (&chat_id, Type::TEXT)]).await.map_err(db)
        })
    }

    fn rewrite_chat(&self, channel: &str, chat_id: &str, ops: &[Op]) -> Result<(), StoreError> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(db)?;
            tx.execute_typed(DELETE, &[(&channel, Type::TEXT), (&chat_id, Type::TEXT)]).await.map_err(db)?;
            let lines: Vec<&str> = ops.iter().map(|o| o.line.as_str()).collect();
            push(&tx, channel, chat_id, &lines).await?;
            tx.commit().await.map_err(db)
        })
    }
}

impl SharedLog for PgStore {
    fn since(
        &self,
        channel: &str,
        chat_id: &str,
        after: u64,
        each: &mut dyn FnMut(u64, String),
    ) -> Result<(), StoreError> {
        for (pos, line) in self.block(self.since_rows(channel, chat_id, after))? {
            each(pos, line);
        }
        Ok(())
    }

    fn heads_async(&self, keys: Vec<(String, String)>) -> Option<BoxFuture<'static, Heads>> {
        let pool = self.pool.clone();
        Some(Box::pin(async move {
            let (channels, chats): (Vec<String>, Vec<String>) = keys.into_iter().unzip();
            let client = client(&pool).await?;
            let rows = client
                .query_typed(HEADS, &[(&channels, Type::TEXT_ARRAY), (&chats, Type::TEXT_ARRAY)])
                .await
                .map_err(db)?;
            let mut heads = vec![0; channels.len()];
            for row in rows {
                let at = usize::try_from(row.get::<_, i64>(0) - 1).unwrap_or(usize::MAX);
                if let Some(h) = heads.get_mut(at) {
                    *h = pos(row.get(1));
                }
            }
            Ok(heads)
        }))
    }

    fn append_at(&self, channel: &str, chat_id: &str, head: u64, lines: &[String]) -> Result<Option<u64>, StoreError> {
        if lines.is_empty() {
            return Ok(Some(head));
        }
        self.block(async {
            let client = self.client().await?;
            let at = head as i64;
            let params: [(&(dyn ToSql + Sync), Type); 4] =
                [(&channel, Type::TEXT), (&chat_id, Type::TEXT), (&at, Type::INT8), (&lines, Type::TEXT_ARRAY)];
            let rows = client.query_typed(APPEND_AT, &params).await.map_err(db)?;
            Ok((rows.len() == lines.len()).then_some(head + lines.len() as u64))
        })
    }

    fn compact_at(&self, channel: &str, chat_id: &str, at: u64, line: &str) -> Result<(), StoreError> {
        self.block(async {
            let client = self.client().await?;
            let at = at as i64;
            let params: [(&(dyn ToSql + Sync), Type); 4] =
                [(&channel, Type::TEXT), (&chat_id, Type::TEXT), (&at, Type::INT8), (&line, Type::TEXT)];
            client
                .execute_typed(
                    "WITH kept AS (
                         UPDATE chatctx_ops SET line = $4 WHERE channel = $1 AND chat_id = $2 AND pos = $3
                         RETURNING pos)
                     DELETE FROM chatctx_ops WHERE channel = $1 AND chat_id = $2 AND pos < (SELECT pos FROM kept)",
                    &params,
                )
                .await
                .map_err(db)?;
            Ok(())
        })
    }

    fn note_external(&self, channel: &str, chat_id: &str, external_id: &str) -> Result<(), StoreError> {
        self.block(async {
            let params: [(&(dyn ToSql + Sync), Type); 3] =
                [(&external_id, Type::TEXT), (&channel, Type::TEXT), (&chat_id, Type::TEXT)];
            let sql = "INSERT INTO chatctx_externals (external_id, channel, chat_id) VALUES ($1, $2, $3)
                       ON CONFLICT (external_id) DO UPDATE SET channel = EXCLUDED.channel, chat_id = EXCLUDED.chat_id";
            self.client().await?.execute_typed(sql, &params).await.map_err(db)?;
            Ok(())
        })
    }

    fn find_external(&self, external_id: &str) -> Result<Option<(String, String)>, StoreError> {
        self.block(async {
            let sql = "SELECT channel, chat_id FROM chatctx_externals WHERE external_id = $1";
            let row = self.client().await?.query_typed_opt(sql, &[(&external_id, Type::TEXT)]).await.map_err(db)?;
            Ok(row.map(|r| (r.get(0), r.get(1))))
        })
    }

    fn forget_externals(&self, channel: &str, chat_id: &str) -> Result<(), StoreError> {
        self.block(async {
            let sql = "DELETE FROM chatctx_externals WHERE channel = $1 AND chat_id = $2";
            let params: [(&(dyn ToSql + Sync), Type); 2] = [(&channel, Type::TEXT), (&chat_id, Type::TEXT)];
            self.client().await?.execute_typed(sql, &params).await.map_err(db)?;
            Ok(())
        })
    }

    fn chat_ids(&self, channel: &str) -> Result<Vec<String>, StoreError> {
        self.block(async {
            let sql = "SELECT chat_id FROM chatctx_chats WHERE channel = $1 ORDER BY chat_id";
            let rows = self.client().await?.query_typed(sql, &[(&channel, Type::TEXT)]).await.map_err(db)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }
}

/// For tests: creates a fresh, empty database next to the one `admin_url` names, and returns its URL.
#[doc(hidden)]
pub fn create_database(admin_url: &str, name: &str) -> Result<String, StoreError> {
    let config: tokio_postgres::Config = admin_url.parse().map_err(db)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(pg)?;
    rt.block_on(async {
        let (client, conn) = config.connect(NoTls).await.map_err(db)?;
        tokio::spawn(conn);
        client.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).await.map_err(db)?;
        client.batch_execute(&format!("CREATE DATABASE {name}")).await.map_err(db)?;
        Ok::<_, StoreError>(())
    })?;
    let (base, query) = admin_url.split_once('?').map_or((admin_url, None), |(b, q)| (b, Some(q)));
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let root = match base[authority_end..].find('/') {
        Some(i) => &base[..authority_end + i],
        None => base,
    };
    Ok(match query {
        Some(q) => format!("{root}/{name}?{q}"),
        None => format!("{root}/{name}"),
    })
}
