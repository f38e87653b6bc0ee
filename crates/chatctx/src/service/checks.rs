//! A shared store's news checks, batched: every read in flight on this instance asks for its chats' heads
//! (their newest logged positions) and one query answers all of them, so that a busy instance makes one
//! round trip per batch instead of one or two per read (issue 32, point 5).
//!
//! A read must see everything acknowledged before it began, in any instance. So a check is answered only by a
//! query that started after the check was asked: the waiting checks are taken when a query starts, and a check
//! asked while a query runs waits for the next one. One query runs at a time; it carries at most
//! [`MOST_KEYS_PER_QUERY`] distinct chats, and checks past that wait for the next query (which also starts
//! after they were asked). The number of checks waiting is bounded by the reads in flight, which the server's
//! connection and request limits bound.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use chatctx_store::{BoxFuture, Heads};
use tokio::sync::oneshot;

use super::log::ChatKey as LogKey;

/// How the heads of some chats are read: one query, or `None` when the store cannot (it is not asked then).
pub(super) type HeadsQuery = dyn Fn(Vec<LogKey>) -> Option<BoxFuture<'static, Heads>> + Send + Sync;

/// The most distinct chats one query asks for.
const MOST_KEYS_PER_QUERY: usize = 1024;

/// Checks waiting for the next query, and whether a query (or the task that runs them) is under way.
#[derive(Default)]
struct Queue {
    waiting: Vec<Waiter>,
    running: bool,
}

/// Where a check's answer goes: the heads in the order asked, or the store's error.
type Reply = oneshot::Sender<Result<Vec<u64>, String>>;

/// One check: its chats and where its answer goes.
struct Waiter {
    keys: Vec<LogKey>,
    reply: Reply,
}

/// Batched head reads for one instance.
pub(super) struct Checks {
    query: Box<HeadsQuery>,
    queue: Mutex<Queue>,
}

impl Checks {
    pub(super) fn new(query: Box<HeadsQuery>) -> Arc<Self> {
        Arc::new(Self { query, queue: Mutex::new(Queue::default()) })
    }

    /// The newest logged position of each of `keys`, in order, read by a query that started after this call.
    /// Must be called within a tokio runtime: the queries run on a task of their own, so that a read whose
    /// client went away does not stop the checks of others.
    pub(super) async fn heads(self: &Arc<Self>, keys: Vec<LogKey>) -> Result<Vec<u64>, String> {
        let (reply, answer) = oneshot::channel();
        let start = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.waiting.push(Waiter { keys, reply });
            !std::mem::replace(&mut queue.running, true)
        };
        if start {
            let checks = self.clone();
            tokio::spawn(async move { checks.run().await });
        }
        answer.await.map_err(|_| "the check of the store was dropped".to_owned())?
    }

    /// Runs queries until no check waits.
    async fn run(&self) {
        loop {
            let batch = {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                if queue.waiting.is_empty() {
                    queue.running = false;
                    return;
                }
                take_batch(&mut queue.waiting)
            };
            self.answer(batch).await;
        }
    }

    /// One query for the distinct chats of `batch`; each check gets its own chats' heads.
    async fn answer(&self, batch: Vec<Waiter>) {
        let mut distinct: BTreeMap<LogKey, usize> = BTreeMap::new();
        let mut asked: Vec<(Vec<usize>, Reply)> = Vec::with_capacity(batch.len());
        for w in batch {
            let at = w
                .keys
                .into_iter()
                .map(|k| {
                    let next = distinct.len();
                    *distinct.entry(k).or_insert(next)
                })
                .collect();
            asked.push((at, w.reply));
        }
        let mut keys = vec![(String::new(), String::new()); distinct.len()];
        for (k, at) in distinct {
            keys[at] = k;
        }
        let heads = match (self.query)(keys) {
            Some(query) => query.await.map_err(|e| e.to_string()),
            None => Err("the store cannot read heads".to_owned()),
        };
        for (at, reply) in asked {
            let answer = heads.as_ref().map(|h| at.iter().map(|&i| h.get(i).copied().unwrap_or(0)).collect());
            // The asker may have gone (its client disconnected): nothing to tell it.
            let _ = reply.send(answer.map_err(Clone::clone));
        }
    }
}

/// The oldest waiting checks whose chats fit in one query (at least one check), taken off the queue.
fn take_batch(waiting: &mut Vec<Waiter>) -> Vec<Waiter> {
    let mut keys = 0;
    let fit = waiting
        .iter()
        .take_while(|w| {
            keys += w.keys.len();
            keys <= MOST_KEYS_PER_QUERY
        })
        .count()
        .max(1);
    let rest = waiting.split_off(fit.min(waiting.len()));
    std::mem::replace(waiting, rest)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use super::*;

    /// A store whose every chat has head `head`, read when a query starts; each query takes `delay` and is
    /// counted.
    struct Fake {
        head: AtomicU64,
        queries: AtomicU64,
    }

    fn checks(fake: &Arc<Fake>, delay: Duration) -> Arc<Checks> {
        let fake = fake.clone();
        Checks::new(Box::new(move |keys: Vec<LogKey>| {
            fake.queries.fetch_add(1, Ordering::SeqCst);
            let head = fake.head.load(Ordering::SeqCst);
            let n = keys.len();
            Some(Box::pin(async move {
                tokio::time::sleep(delay).await;
                Ok(vec![head; n])
            }) as BoxFuture<'static, Heads>)
        }))
    }

    fn key(chat: &str) -> LogKey {
        ("telegram".to_owned(), chat.to_owned())
    }

    #[tokio::test]
    async fn a_check_is_never_answered_by_a_query_that_started_before_it() {
        let fake = Arc::new(Fake { head: AtomicU64::new(0), queries: AtomicU64::new(0) });
        let checks = checks(&fake, Duration::from_millis(50));
        let first = tokio::spawn({
            let checks = checks.clone();
            async move { checks.heads(vec![key("-1")]).await }
        });
        // The first query is under way (it read head 0); a write is acknowledged; then a check is asked.
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(fake.queries.load(Ordering::SeqCst), 1);
        fake.head.store(7, Ordering::SeqCst);
        let second = checks.heads(vec![key("-1"), key("-2")]).await;
        assert_eq!(first.await.unwrap(), Ok(vec![0]));
        assert_eq!(second, Ok(vec![7, 7]), "a check waits for a query begun after it");
        assert_eq!(fake.queries.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_checks_share_queries_and_each_gets_its_own_chats() {
        let fake = Arc::new(Fake { head: AtomicU64::new(3), queries: AtomicU64::new(0) });
        let checks = checks(&fake, Duration::from_millis(5));
        let asks: Vec<_> = (0..200)
            .map(|i| {
                let checks = checks.clone();
                tokio::spawn(async move { checks.heads(vec![key(&format!("-{i}")), key("directory")]).await })
            })
            .collect();
        for ask in asks {
            assert_eq!(ask.await.unwrap(), Ok(vec![3, 3]));
        }
        let queries = fake.queries.load(Ordering::SeqCst);
        assert!((1..50).contains(&queries), "200 checks in flight at once took {queries} queries");
    }

    #[tokio::test]
    async fn a_failed_query_fails_the_checks_it_answered_and_the_next_one_runs() {
        let calls = Arc::new(AtomicU64::new(0));
        let c = calls.clone();
        let checks = Checks::new(Box::new(move |keys: Vec<LogKey>| {
            let first = c.fetch_add(1, Ordering::SeqCst) == 0;
            Some(Box::pin(async move {
                if first {
                    Err(chatctx_store::StoreError::Postgres("connection refused".to_owned()))
                } else {
                    Ok(vec![1_u64; keys.len()])
                }
            }) as BoxFuture<'static, Heads>)
        }));
        assert_eq!(checks.heads(vec![key("-1")]).await, Err("postgres: connection refused".to_owned()));
        assert_eq!(checks.heads(vec![key("-1")]).await, Ok(vec![1]));
    }

    #[test]
    fn a_batch_holds_at_most_the_keys_of_one_query_and_at_least_one_check() {
        let waiter = |n: usize| Waiter { keys: vec![key("-1"); n], reply: oneshot::channel().0 };
        let mut waiting: Vec<Waiter> = (0..3).map(|_| waiter(MOST_KEYS_PER_QUERY / 2)).collect();
        assert_eq!(take_batch(&mut waiting).len(), 2);
        assert_eq!(waiting.len(), 1);
        let mut big = vec![waiter(MOST_KEYS_PER_QUERY + 1), waiter(1)];
        assert_eq!(take_batch(&mut big).len(), 1);
        assert_eq!(big.len(), 1);
    }
}
