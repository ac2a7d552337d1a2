//! Contract of [`SessionRegistry`].

use memory_core::ports::SessionRegistry;
use memory_core::{MemoryError, NewSession, SessionPatch, SessionUsage, Timestamp};

use super::fresh_session;

/// Runs every registry contract check.
pub async fn run_all(registry: &dyn SessionRegistry) {
    create_get_delete(registry).await;
    list_orders_by_update(registry).await;
    update_usage_and_touch(registry).await;
    touch_and_name_names_only_the_unnamed(registry).await;
    restore_keeps_every_field(registry).await;
    profile_binding(registry).await;
}

/// A session's profile binding is stored at creation, changed or removed only by a patch
/// that names it, and left alone by every other patch.
pub async fn profile_binding(registry: &dyn SessionRegistry) {
    let id = fresh_session("reg-bound");
    let spec = NewSession {
        profile: Some("team".into()),
        ..NewSession::default()
    };
    let info = registry.create(&id, &spec, Timestamp(10)).await.unwrap();
    assert_eq!(info.profile.as_deref(), Some("team"));
    let rename = SessionPatch {
        name: Some("renamed".into()),
        ..SessionPatch::default()
    };
    let info = registry.update(&id, &rename, Timestamp(11)).await.unwrap();
    assert_eq!(
        info.profile.as_deref(),
        Some("team"),
        "a rename keeps the binding"
    );
    let rebind = SessionPatch {
        profile: Some(Some("other".into())),
        ..SessionPatch::default()
    };
    let info = registry.update(&id, &rebind, Timestamp(12)).await.unwrap();
    assert_eq!(info.profile.as_deref(), Some("other"));
    assert_eq!(
        registry.get(&id).await.unwrap().unwrap().profile.as_deref(),
        Some("other")
    );
    let listed = registry.list(10_000, 0).await.unwrap();
    let row = listed.iter().find(|s| s.id == id).unwrap();
    assert_eq!(
        row.profile.as_deref(),
        Some("other"),
        "list shows the binding"
    );
    let unbind = SessionPatch {
        profile: Some(None),
        ..SessionPatch::default()
    };
    let info = registry.update(&id, &unbind, Timestamp(13)).await.unwrap();
    assert_eq!(info.profile, None);
    assert_eq!(info.name.as_deref(), Some("renamed"));
    assert_eq!(registry.get(&id).await.unwrap().unwrap().profile, None);
    registry.delete(&id).await.unwrap();
    let unbound = fresh_session("reg-unbound");
    let info = registry
        .create(&unbound, &NewSession::default(), Timestamp(10))
        .await
        .unwrap();
    assert_eq!(info.profile, None);
    registry.delete(&unbound).await.unwrap();
}

/// `restore` inserts a record exactly as given; a second restore (or one over a live
/// session) changes nothing and says so.
pub async fn restore_keeps_every_field(registry: &dyn SessionRegistry) {
    let info = memory_core::SessionInfo {
        id: fresh_session("restored"),
        name: Some("Imported".into()),
        parent_session_id: None,
        model: Some("m".into()),
        source: None,
        usage: SessionUsage {
            input_tokens: 12,
            output_tokens: 34,
            cost: 0.5,
        },
        end_reason: Some("done".into()),
        profile: Some("imported-profile".into()),
        created_at: Timestamp(111),
        updated_at: Timestamp(222),
    };
    assert!(registry.restore(&info).await.unwrap());
    assert_eq!(registry.get(&info.id).await.unwrap(), Some(info.clone()));
    let mut changed = info.clone();
    changed.name = Some("Other".into());
    assert!(!registry.restore(&changed).await.unwrap());
    assert_eq!(registry.get(&info.id).await.unwrap(), Some(info.clone()));
    assert!(registry.delete(&info.id).await.unwrap());
}

/// Create stores every field; a second create fails; delete removes.
pub async fn create_get_delete(registry: &dyn SessionRegistry) {
    let id = fresh_session("reg");
    let parent = fresh_session("reg-parent");
    let spec = NewSession {
        id: None,
        name: Some("Trip planning".into()),
        parent_session_id: Some(parent.clone()),
        model: Some("gpt-test".into()),
        source: Some("cli".into()),
        profile: None,
    };
    let info = registry.create(&id, &spec, Timestamp(1_000)).await.unwrap();
    assert_eq!(info.id, id);
    assert_eq!(info.name.as_deref(), Some("Trip planning"));
    assert_eq!(info.parent_session_id, Some(parent));
    assert_eq!(info.created_at, Timestamp(1_000));
    assert_eq!(info.updated_at, Timestamp(1_000));
    assert_eq!(registry.get(&id).await.unwrap(), Some(info));
    let again = registry.create(&id, &spec, Timestamp(2_000)).await;
    assert!(
        matches!(again, Err(MemoryError::AlreadyExists { .. })),
        "{again:?}"
    );
    assert!(registry.delete(&id).await.unwrap());
    assert!(!registry.delete(&id).await.unwrap());
    assert_eq!(registry.get(&id).await.unwrap(), None);
}

/// `list` is most recently updated first, ties by most recently created.
pub async fn list_orders_by_update(registry: &dyn SessionRegistry) {
    // Far-future times so sessions of other tests sort after these.
    let base = 9_000_000_000_000;
    let a = fresh_session("reg-a");
    let b = fresh_session("reg-b");
    let c = fresh_session("reg-c");
    registry
        .create(&a, &NewSession::default(), Timestamp(base))
        .await
        .unwrap();
    registry
        .create(&b, &NewSession::default(), Timestamp(base))
        .await
        .unwrap();
    registry
        .create(&c, &NewSession::default(), Timestamp(base + 1))
        .await
        .unwrap();
    registry.touch(&a, Timestamp(base + 2)).await.unwrap();
    let listed: Vec<_> = registry
        .list(3, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, vec![a.clone(), c.clone(), b.clone()]);
    let second: Vec<_> = registry
        .list(1, 1)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(second, vec![c.clone()]);
    for id in [a, b, c] {
        registry.delete(&id).await.unwrap();
    }
}

/// `update`, `add_usage` and `touch` change what they say and `updated_at`; unknown ids fail.
pub async fn update_usage_and_touch(registry: &dyn SessionRegistry) {
    let id = fresh_session("reg-upd");
    registry
        .create(&id, &NewSession::default(), Timestamp(10))
        .await
        .unwrap();
    let patch = SessionPatch {
        name: Some("renamed".into()),
        model: None,
        end_reason: Some("compaction".into()),
        profile: None,
    };
    let info = registry.update(&id, &patch, Timestamp(20)).await.unwrap();
    assert_eq!(info.name.as_deref(), Some("renamed"));
    assert_eq!(info.end_reason.as_deref(), Some("compaction"));
    assert_eq!(info.updated_at, Timestamp(20));
    let usage = SessionUsage {
        input_tokens: 100,
        output_tokens: 20,
        cost: 0.25,
    };
    registry.add_usage(&id, usage, Timestamp(30)).await.unwrap();
    let info = registry.add_usage(&id, usage, Timestamp(40)).await.unwrap();
    assert_eq!(info.usage.input_tokens, 200);
    assert_eq!(info.usage.output_tokens, 40);
    assert!((info.usage.cost - 0.5).abs() < 1e-9);
    assert_eq!(info.updated_at, Timestamp(40));
    let missing = fresh_session("reg-missing");
    assert!(
        registry
            .update(&missing, &patch, Timestamp(1))
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        registry
            .add_usage(&missing, usage, Timestamp(1))
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        registry
            .touch(&missing, Timestamp(1))
            .await
            .unwrap_err()
            .is_not_found()
    );
    registry.delete(&id).await.unwrap();
}

/// `touch_and_name` moves `updated_at` like `touch`, names a session that has no name, and
/// leaves a name alone once one is set (`""` included); an unknown id fails.
pub async fn touch_and_name_names_only_the_unnamed(registry: &dyn SessionRegistry) {
    let id = fresh_session("reg-title");
    registry
        .create(&id, &NewSession::default(), Timestamp(10))
        .await
        .unwrap();
    registry
        .touch_and_name(&id, Timestamp(20), None)
        .await
        .unwrap();
    let info = registry.get(&id).await.unwrap().unwrap();
    assert_eq!(info.name, None);
    assert_eq!(info.updated_at, Timestamp(20));
    registry
        .touch_and_name(&id, Timestamp(30), Some("first words".into()))
        .await
        .unwrap();
    registry
        .touch_and_name(&id, Timestamp(40), Some("later words".into()))
        .await
        .unwrap();
    let info = registry.get(&id).await.unwrap().unwrap();
    assert_eq!(info.name.as_deref(), Some("first words"));
    assert_eq!(info.updated_at, Timestamp(40));
    let blank = fresh_session("reg-blank");
    registry
        .create(&blank, &NewSession::default(), Timestamp(10))
        .await
        .unwrap();
    let clear = SessionPatch {
        name: Some(String::new()),
        ..SessionPatch::default()
    };
    registry
        .update(&blank, &clear, Timestamp(20))
        .await
        .unwrap();
    registry
        .touch_and_name(&blank, Timestamp(30), Some("not taken".into()))
        .await
        .unwrap();
    assert_eq!(
        registry.get(&blank).await.unwrap().unwrap().name.as_deref(),
        Some("")
    );
    let missing = fresh_session("reg-title-missing");
    assert!(
        registry
            .touch_and_name(&missing, Timestamp(1), Some("x".into()))
            .await
            .unwrap_err()
            .is_not_found()
    );
    for id in [id, blank] {
        registry.delete(&id).await.unwrap();
    }
}
