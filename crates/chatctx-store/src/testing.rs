//! Helpers for tests of chatctx and of programs built on it (cargo feature `testing`): scratch directories that
//! remove themselves, and test databases named by the environment, skipped with a note where unset and
//! required under `CI=true`.

/// A test's scratch directory under the system temp dir, named for the process and `name`: emptied when made,
/// removed with everything in it when dropped, so test runs leave nothing behind.
#[derive(Debug)]
pub struct Scratch(std::path::PathBuf);

impl Scratch {
    /// Makes the directory `chatctx-NAME-PID` afresh. A test that cannot make it fails loudly.
    #[allow(clippy::disallowed_methods)]
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("chatctx-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
        Self(dir)
    }

    /// The directory.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// A path inside the directory.
    pub fn file(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A test's server from the environment: `None` with a SKIPPED note when unset, a panic under `CI=true`
/// (where every test must run).
#[allow(clippy::disallowed_methods)] // a test helper: a misconfigured CI must fail loudly
pub fn test_env(var: &str, what: &str, test: &str) -> Option<String> {
    let value = std::env::var(var).ok();
    if value.is_none() {
        assert!(std::env::var("CI").is_err(), "{var} must be set in CI ({test})");
        eprintln!("SKIPPED {test}: set {var} to {what} to run it");
    }
    value
}

/// For tests that need PostgreSQL: a fresh database (named `name`, made unique per process) on the server
/// `CHATCTX_TEST_POSTGRES` names (an admin URL such as `postgres://postgres@127.0.0.1:5432/postgres`).
/// Without that variable: `None` with a SKIPPED note, or a panic under `CI=true`, where these tests must run.
// A test helper: a misconfigured test environment must fail the test loudly.
#[allow(clippy::disallowed_methods)]
pub fn test_postgres_url(name: &str) -> Option<String> {
    let admin = test_env("CHATCTX_TEST_POSTGRES", "a PostgreSQL admin URL", name)?;
    #[cfg(feature = "postgres")]
    return Some(
        crate::create_database(&admin, &format!("{name}_{}", std::process::id()))
            .unwrap_or_else(|e| panic!("cannot create a test database on {admin}: {e}")),
    );
    #[cfg(not(feature = "postgres"))]
    panic!("CHATCTX_TEST_POSTGRES is set but this build has no `postgres` feature ({admin})");
}

/// For tests of PostgreSQL through a connection pooler: a fresh database made as [`test_postgres_url`] does,
/// reached through the PgBouncer (transaction pooling) that `CHATCTX_TEST_PGBOUNCER` names as `HOST:PORT`.
/// Without that variable: `None` with a SKIPPED note, or a panic under `CI=true`.
// A test helper: a misconfigured test environment must fail the test loudly.
#[allow(clippy::disallowed_methods)]
pub fn test_pgbouncer_url(name: &str) -> Option<String> {
    let bouncer = test_env("CHATCTX_TEST_PGBOUNCER", "a PgBouncer's HOST:PORT", name)?;
    let direct = test_postgres_url(name)?;
    // postgres://USER[:PASSWORD]@HOST:PORT/DATABASE → the same through the bouncer.
    let at = direct.rfind('@').expect("the admin URL names a user") + 1;
    let slash = at + direct[at..].find('/').expect("the URL names a database");
    Some(format!("{}{bouncer}{}", &direct[..at], &direct[slash..]))
}

/// A store over another that refuses every write while told to, as a full disk would (fault injection): as a
/// [`crate::Log`] over a log, and as a [`crate::SharedLog`] over a shared log (where it refuses appends).
pub struct Faulty<S: ?Sized = dyn crate::Log> {
    inner: std::sync::Arc<S>,
    failing: std::sync::atomic::AtomicBool,
    refused: std::sync::atomic::AtomicU64,
    /// While failing, a probe write at most this large still passes (a nearly full disk has a free page).
    small_probe: std::sync::atomic::AtomicUsize,
}

impl<S: ?Sized> Faulty<S> {
    /// Over `inner`, taking writes until [`Faulty::fail`] says otherwise.
    pub fn new(inner: std::sync::Arc<S>) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self { inner, failing: false.into(), refused: 0.into(), small_probe: 0.into() })
    }

    /// Refuse writes (`true`) or take them again.
    pub fn fail(&self, on: bool) {
        self.failing.store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// While failing, let probe writes of at most `bytes` pass, as a nearly full disk does.
    pub fn pass_probes_up_to(&self, bytes: usize) {
        self.small_probe.store(bytes, std::sync::atomic::Ordering::SeqCst);
    }

    /// How many writes were refused.
    pub fn refused(&self) -> u64 {
        self.refused.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn check(&self) -> Result<(), crate::StoreError> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            self.refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Err(crate::StoreError::Damaged("injected fault: no space left on device".to_owned()));
        }
        Ok(())
    }
}

impl<S: crate::Store + ?Sized> crate::Store for Faulty<S> {
    fn load(&self, each: &mut dyn FnMut(u64, crate::Op)) -> Result<u64, crate::StoreError> {
        self.inner.load(each)
    }
}

impl<S: crate::Log + ?Sized> crate::Log for Faulty<S> {
    fn append(&self, ops: &[crate::Op]) -> Result<(), crate::StoreError> {
        self.check()?;
        self.inner.append(ops)
    }

    fn write(&self, ops: &[crate::Op], snapshots: &[crate::Op], erase: bool) -> Result<(), crate::StoreError> {
        self.check()?;
        self.inner.write(ops, snapshots, erase)
    }

    fn write_making(
        &self,
        ops: &[crate::Op],
        chats: &[(String, String)],
        make: &mut dyn FnMut() -> Vec<crate::Op>,
        erase: bool,
    ) -> Result<Vec<crate::Op>, crate::StoreError> {
        self.check()?;
        self.inner.write_making(ops, chats, make, erase)
    }

    fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<u64, crate::StoreError> {
        self.check()?;
        self.inner.delete_chat(channel, chat_id)
    }

    fn rewrite_chat(&self, channel: &str, chat_id: &str, ops: &[crate::Op]) -> Result<(), crate::StoreError> {
        self.check()?;
        self.inner.rewrite_chat(channel, chat_id, ops)
    }

    fn reclaim(&self, most: usize) -> Vec<(String, String)> {
        self.inner.reclaim(most)
    }

    fn load_chat(
        &self,
        channel: &str,
        chat_id: &str,
        each: &mut dyn FnMut(u64, String),
    ) -> Result<(), crate::StoreError> {
        self.inner.load_chat(channel, chat_id, each)
    }

    fn probe_write(&self, bytes: usize) -> Result<(), crate::StoreError> {
        if bytes > self.small_probe.load(std::sync::atomic::Ordering::SeqCst) {
            self.check()?;
        }
        self.inner.probe_write(bytes)
    }
}

impl<S: crate::SharedLog + ?Sized> crate::SharedLog for Faulty<S> {
    fn since(
        &self,
        channel: &str,
        chat_id: &str,
        after: u64,
        each: &mut dyn FnMut(u64, String),
    ) -> Result<(), crate::StoreError> {
        self.inner.since(channel, chat_id, after, each)
    }

    fn append_at(
        &self,
        channel: &str,
        chat_id: &str,
        head: u64,
        lines: &[String],
    ) -> Result<Option<u64>, crate::StoreError> {
        self.check()?;
        self.inner.append_at(channel, chat_id, head, lines)
    }

    fn compact_at(&self, channel: &str, chat_id: &str, at: u64, line: &str) -> Result<(), crate::StoreError> {
        self.inner.compact_at(channel, chat_id, at, line)
    }

    fn note_external(&self, channel: &str, chat_id: &str, id: &str) -> Result<(), crate::StoreError> {
        self.inner.note_external(channel, chat_id, id)
    }

    fn find_external(&self, id: &str) -> Result<Option<(String, String)>, crate::StoreError> {
        self.inner.find_external(id)
    }

    fn forget_externals(&self, channel: &str, chat_id: &str) -> Result<(), crate::StoreError> {
        self.inner.forget_externals(channel, chat_id)
    }
}
