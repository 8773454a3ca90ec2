use super::*;
use crate::config::StorageConfig;
use crate::store::Store;

fn store(dir: &std::path::Path) -> Store {
    Store::open(&StorageConfig {
        data_dir: dir.to_path_buf(),
        ..StorageConfig::default()
    })
    .unwrap()
}

async fn exec(store: &Store, sql: &'static str) {
    store
        .run(move |c| c.execute_batch(sql).map_err(crate::store::StoreError::from))
        .await
        .unwrap();
}

#[tokio::test]
async fn jobs_that_commit_bump_the_epoch_and_reads_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    exec(&store, "CREATE TABLE t (x INTEGER)").await;
    let e0 = store.epoch().current();
    exec(&store, "INSERT INTO t VALUES (1)").await;
    let e1 = store.epoch().current();
    assert!(e1 > e0, "a write bumps");
    exec(&store, "SELECT * FROM t").await;
    assert_eq!(store.epoch().current(), e1, "a read does not");
    // A statement that commits when it is reset, not when stepped to the end.
    store
        .run(|c| {
            c.query_row("DELETE FROM t RETURNING x", [], |r| r.get::<_, i64>(0))
                .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
    assert!(store.epoch().current() > e1, "DELETE … RETURNING bumps");
    let e2 = store.epoch().current();
    let failed: Result<(), crate::store::StoreError> = store
        .run(|c| {
            let tx = c.transaction()?;
            tx.execute("INSERT INTO t VALUES (2)", [])?;
            Ok(()) // dropped: rolled back
        })
        .await;
    failed.unwrap();
    assert_eq!(store.epoch().current(), e2, "a rollback does not");
}

#[tokio::test]
async fn cached_values_go_stale_with_the_next_commit_and_with_age() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    exec(&store, "CREATE TABLE t (x INTEGER)").await;
    let cache: EpochCache<&'static str, u32> =
        EpochCache::new(store.epoch(), 10, Duration::from_secs(60), None);
    cache.insert("a", cache.epoch(), 1);
    assert_eq!(cache.get(&"a"), Some(1));
    exec(&store, "INSERT INTO t VALUES (1)").await;
    assert_eq!(cache.get(&"a"), None, "a commit invalidates");

    let before_write = cache.epoch();
    exec(&store, "INSERT INTO t VALUES (2)").await;
    cache.insert("b", before_write, 2);
    assert_eq!(cache.get(&"b"), None, "read before a commit: not kept");

    let aged: EpochCache<&'static str, u32> =
        EpochCache::new(store.epoch(), 10, Duration::from_millis(50), None);
    aged.insert("c", aged.epoch(), 3);
    assert_eq!(aged.get(&"c"), Some(3));
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(aged.get(&"c"), None, "older than max_age");
}

#[tokio::test]
async fn a_write_scoped_to_one_user_ends_only_that_users_entries() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    exec(&store, "CREATE TABLE t (x INTEGER)").await;
    let cache: EpochCache<&'static str, u32> =
        EpochCache::new(store.epoch(), 10, Duration::from_secs(60), None);
    let (a, b) = ("user-a", "user-b");
    assert_ne!(slot_of(a), slot_of(b), "the test needs two slots");
    cache.insert_for("a", cache.epoch(), a, 1);
    cache.insert_for("b", cache.epoch(), b, 2);
    cache.insert("anyone", cache.epoch(), 3);

    scoped_write(&store, b).await;
    assert_eq!(
        cache.get(&"a"),
        Some(1),
        "another user's write keeps A's entry"
    );
    assert_eq!(cache.get(&"b"), None, "B's own write ends B's entry");
    assert_eq!(
        cache.get(&"anyone"),
        None,
        "an entry of unknown scope ends with any write"
    );

    cache.insert_for("b", cache.epoch(), b, 2);
    exec(&store, "INSERT INTO t VALUES (9)").await; // no scope: anyone's
    assert_eq!(cache.get(&"a"), None, "an unscoped write ends every entry");
    assert_eq!(cache.get(&"b"), None);

    // A job that declares two users counts as anyone's.
    cache.insert_for("a", cache.epoch(), a, 1);
    store
        .run(move |c| {
            scope_to_user(a);
            scope_to_user(b);
            c.execute_batch("INSERT INTO t VALUES (3)")
                .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
    assert_eq!(cache.get(&"a"), None, "two users declared: global");
}

#[tokio::test]
async fn an_entry_read_across_any_commit_is_not_filed() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    exec(&store, "CREATE TABLE t (x INTEGER)").await;
    let cache: EpochCache<&'static str, u32> =
        EpochCache::new(store.epoch(), 10, Duration::from_secs(60), None);
    let before = cache.epoch();
    // A's data read, then another user's write lands before A's entry is filed: the slot
    // values seen at filing cannot be proven to predate the read, so it is not kept.
    scoped_write(&store, "user-b").await;
    cache.insert_for("a", before, "user-a", 1);
    assert_eq!(cache.get(&"a"), None);
    // The scope is per job: the next job without one is global again.
    cache.insert_for("a", cache.epoch(), "user-a", 1);
    exec(&store, "INSERT INTO t VALUES (5)").await;
    assert_eq!(cache.get(&"a"), None);
}

async fn scoped_write(store: &Store, user: &'static str) {
    store
        .run(move |c| {
            scope_to_user(user);
            c.execute_batch("INSERT INTO t VALUES (7)")
                .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_bookkeeping_write_ends_no_entry_but_is_not_filed_across() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    exec(&store, "CREATE TABLE t (x INTEGER)").await;
    let cache: EpochCache<&'static str, u32> =
        EpochCache::new(store.epoch(), 10, Duration::from_secs(60), None);
    let bookkeeping = |store: &Store| {
        let store = store.clone();
        async move {
            store
                .run(move |c| {
                    scope_to_user("user-a");
                    c.execute_batch("INSERT INTO t VALUES (1)")
                        .map_err(crate::store::StoreError::from)?;
                    super::no_cached_data_changed();
                    Ok::<_, crate::store::StoreError>(())
                })
                .await
                .unwrap()
        }
    };
    cache.insert_for("a", cache.epoch(), "user-a", 1);
    bookkeeping(&store).await;
    assert_eq!(cache.get(&"a"), Some(1), "the user's entry stays");
    // A fill under way when it committed is still not filed.
    let before = cache.epoch();
    bookkeeping(&store).await;
    cache.insert_for("b", before, "user-a", 2);
    assert_eq!(cache.get(&"b"), None);
    // A later job without the declaration ends the user's entries again.
    scoped_write(&store, "user-a").await;
    assert_eq!(cache.get(&"a"), None);
}
