//! The store's own tests: pages read in index order, migrations, transactions that read
//! then write, a database from a newer binary.

use super::*;

#[test]
fn room_list_pages_are_read_in_index_order_without_sorting_all_rooms() {
    use crate::store::rooms::{list_page_query, RoomListKey, RoomSort};
    let (_dir, store) = Store::open_temp();
    let conn = store.conn().unwrap();
    let after = RoomListKey {
        pinned: false,
        primary: 0.5,
        recency: 1_000,
        room_id: "!r:hs".into(),
    };
    for sort in [RoomSort::Importance, RoomSort::Recent, RoomSort::Unread] {
        for archived in [false, true] {
            for after in [None, Some(&after)] {
                let (sql, args) = list_page_query("u", sort, Some(archived), after, 51);
                let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
                let plan: Vec<String> = stmt
                    .query_map(rusqlite::params_from_iter(args), |r| r.get(3))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                let plan = plan.join("; ");
                assert!(plan.contains("rooms_page_"), "{sort:?}: {plan}");
                assert!(!plan.contains("TEMP B-TREE"), "{sort:?}: {plan}");
            }
        }
    }
}

#[test]
fn migrations_apply_once_and_record_the_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let config = StorageConfig {
        data_dir: dir.path().to_path_buf(),
        ..StorageConfig::default()
    };
    let store = Store::open(&config).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    // Re-opening applies nothing and keeps the version.
    let again = Store::open(&config).unwrap();
    assert_eq!(again.migrate().unwrap(), SCHEMA_VERSION);
    let conn = again.conn().unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = conn
        .pragma_query_value(None, "foreign_keys", |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
    let secure: i64 = conn
        .pragma_query_value(None, "secure_delete", |r| r.get(0))
        .unwrap();
    assert_eq!(
        secure, 1,
        "deleted content is zeroed on every pooled connection"
    );
}

#[test]
fn a_transaction_that_reads_then_writes_survives_a_concurrent_writer() {
    let (_dir, store) = Store::open_temp();
    store
        .conn()
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER)")
        .unwrap();
    let mut a = store.conn().unwrap();
    let tx = a.transaction().unwrap();
    let _: i64 = tx
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .unwrap();
    // Another connection writes while the transaction is open: with a deferred BEGIN it
    // would commit first and the transaction's own write would fail (SQLITE_BUSY).
    let other = store.clone();
    let writer = std::thread::spawn(move || {
        other
            .conn()
            .unwrap()
            .execute("INSERT INTO t VALUES (2)", [])
    });
    std::thread::sleep(Duration::from_millis(100));
    tx.execute("INSERT INTO t VALUES (1)", []).unwrap();
    tx.commit().unwrap();
    writer.join().unwrap().unwrap();
    let n: i64 = a
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
}

#[test]
fn a_database_from_a_newer_binary_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = StorageConfig {
        data_dir: dir.path().to_path_buf(),
        ..StorageConfig::default()
    };
    let store = Store::open(&config).unwrap();
    store
        .conn()
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let err = Store::open(&config).err().expect("must refuse");
    assert!(err.to_string().contains("newer"), "{err}");
}
