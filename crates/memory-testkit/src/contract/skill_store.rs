//! Contract of [`SkillStore`]. Every check writes its own keys; `list` checks filter to them.

use memory_core::ports::SkillStore;

use super::unique;

/// Runs every skill-store contract check.
pub async fn run_all(store: &dyn SkillStore) {
    put_get_list_delete(store).await;
}

/// `put` stores content and description; `list` is sorted; `delete` reports existence.
pub async fn put_get_list_delete(store: &dyn SkillStore) {
    let prefix = unique("skill").replace(['-', '_'], "");
    let review = format!("{prefix}-review");
    let deploy = format!("{prefix}-deploy");
    assert_eq!(store.get(&review).await.unwrap(), None);
    store
        .put(
            &review,
            "# Review\n\nRun the tests first.\n",
            Some("Code review".into()),
        )
        .await
        .unwrap();
    store
        .put(&deploy, "Tag, build, publish.", None)
        .await
        .unwrap();
    assert_eq!(
        store.get(&review).await.unwrap().as_deref(),
        Some("# Review\n\nRun the tests first.\n")
    );
    let listed: Vec<_> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .filter(|s| s.key.starts_with(&prefix))
        .collect();
    assert_eq!(
        listed.iter().map(|s| s.key.as_str()).collect::<Vec<_>>(),
        [deploy.as_str(), review.as_str()]
    );
    assert_eq!(listed[0].description, None);
    assert_eq!(listed[1].description.as_deref(), Some("Code review"));
    store
        .put(
            &deploy,
            "Tag, build, sign, publish.",
            Some("Releases".into()),
        )
        .await
        .unwrap();
    assert_eq!(
        store.get(&deploy).await.unwrap().as_deref(),
        Some("Tag, build, sign, publish.")
    );
    let updated = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.key == deploy)
        .unwrap();
    assert_eq!(updated.description.as_deref(), Some("Releases"));
    assert!(store.delete(&deploy).await.unwrap());
    assert!(!store.delete(&deploy).await.unwrap());
    assert_eq!(store.get(&deploy).await.unwrap(), None);
    store.delete(&review).await.unwrap();
}
