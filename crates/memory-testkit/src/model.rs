//! A deliberately simple model of the history tree, and a proptest driver that checks a
//! [`MessageStore`] against it over random append / branch / update / delete sequences.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_core::ports::{MessageStore, TextIndex};
use memory_core::{
    AppendOutcome, NewMessage, Parent, Role, SearchQuery, SessionId, UiMessage, search_messages,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::contract::fresh_session;

/// One operation of a random sequence.
#[derive(Debug, Clone)]
pub enum Op {
    /// Append message `id` (one of a small pool, so duplicates happen) with a word.
    Append {
        /// Index into the id pool.
        id: u8,
        /// 0 = latest leaf, 1 = root, 2 = explicit parent.
        parent_kind: u8,
        /// Index into the id pool for an explicit parent.
        parent: u8,
        /// Which search word the text carries.
        word: u8,
    },
    /// Replace a message's text.
    Update {
        /// Index into the id pool.
        id: u8,
        /// The new word.
        word: u8,
    },
    /// Delete some messages.
    Delete {
        /// Indexes into the id pool.
        ids: Vec<u8>,
    },
}

const POOL: u8 = 8;
const WORDS: u8 = 4;

fn id_of(i: u8) -> String {
    format!("m{i}")
}

fn word_of(w: u8) -> String {
    ["apple", "banana", "cherry", "damson"][usize::from(w % WORDS)].to_owned()
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..POOL, 0..3u8, 0..POOL, 0..WORDS).prop_map(|(id, parent_kind, parent, word)| Op::Append { id, parent_kind, parent, word }),
        1 => (0..POOL, 0..WORDS).prop_map(|(id, word)| Op::Update { id, word }),
        1 => proptest::collection::vec(0..POOL, 1..3).prop_map(|ids| Op::Delete { ids }),
    ]
}

/// The reference model: nodes in insertion order.
#[derive(Debug, Default, Clone)]
pub struct Model {
    nodes: Vec<(String, Option<String>, String)>,
}

impl Model {
    fn find(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.0 == id)
    }

    /// The latest childless node.
    pub fn latest_leaf(&self) -> Option<String> {
        self.nodes
            .iter()
            .rev()
            .find(|n| !self.nodes.iter().any(|c| c.1.as_deref() == Some(&n.0)))
            .map(|n| n.0.clone())
    }

    /// Applies an append; `None` when the explicit parent is unknown (an error).
    pub fn append(&mut self, id: String, parent: Parent, text: String) -> Option<AppendOutcome> {
        // An existing id wins over a bad parent: re-sending a stored message is idempotent.
        if self.find(&id).is_some() {
            return Some(AppendOutcome::AlreadyExists);
        }
        if let Parent::Message(p) = &parent
            && self.find(p).is_none()
        {
            return None;
        }
        let parent_id = match parent {
            Parent::LatestLeaf => self.latest_leaf(),
            Parent::Root => None,
            Parent::Message(p) => Some(p),
        };
        self.nodes.push((id, parent_id.clone(), text));
        Some(AppendOutcome::Inserted { parent_id })
    }

    /// Root-to-leaf ids.
    pub fn path(&self, leaf: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cursor = Some(leaf.to_owned());
        while let Some(id) = cursor {
            cursor = self.find(&id).and_then(|i| self.nodes[i].1.clone());
            out.push(id);
        }
        out.reverse();
        out
    }

    /// Deletes, re-linking children to the deleted node's parent.
    pub fn delete(&mut self, id: &str) {
        if let Some(i) = self.find(id) {
            let (_, parent, _) = self.nodes.remove(i);
            for n in &mut self.nodes {
                if n.1.as_deref() == Some(id) {
                    n.1 = parent.clone();
                }
            }
        }
    }
}

async fn check_sequence(
    store: &dyn MessageStore,
    index: Option<&dyn TextIndex>,
    session: &SessionId,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut model = Model::default();
    for op in ops {
        match op {
            Op::Append {
                id,
                parent_kind,
                parent,
                word,
            } => {
                let parent = match parent_kind {
                    0 => Parent::LatestLeaf,
                    1 => Parent::Root,
                    _ => Parent::Message(id_of(*parent)),
                };
                let text = word_of(*word);
                let expected = model.append(id_of(*id), parent.clone(), text.clone());
                let message = UiMessage::text_message(id_of(*id), Role::User, text);
                let got = store
                    .append(session, vec![NewMessage::with_parent(message, parent)])
                    .await;
                match (expected, got) {
                    (Some(e), Ok(g)) => prop_assert_eq!(vec![e], g, "append {:?}", op),
                    (None, Err(_)) => {}
                    (e, g) => {
                        return Err(TestCaseError::fail(format!(
                            "append {op:?}: model {e:?}, store {g:?}"
                        )));
                    }
                }
            }
            Op::Update { id, word } => {
                let id = id_of(*id);
                let got = store
                    .update(
                        session,
                        UiMessage::text_message(&id, Role::User, word_of(*word)),
                    )
                    .await;
                match model.find(&id) {
                    Some(i) => {
                        prop_assert!(got.is_ok(), "update {:?}: {:?}", op, got);
                        model.nodes[i].2 = word_of(*word);
                    }
                    None => prop_assert!(
                        got.is_err_and(|e| e.is_not_found()),
                        "update of absent {:?}",
                        op
                    ),
                }
            }
            Op::Delete { ids } => {
                let ids: Vec<String> = ids.iter().map(|i| id_of(*i)).collect();
                let mut expected = 0;
                for id in &ids {
                    if model.find(id).is_some() {
                        expected += 1;
                        model.delete(id);
                    }
                }
                let got = store
                    .delete(session, &ids)
                    .await
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(got, expected as u64, "delete {:?}", op);
            }
        }
        // After every step: latest leaf, every branch's history, children and search agree.
        let leaf = store
            .latest_leaf(session)
            .await
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(leaf, model.latest_leaf(), "latest leaf after {:?}", op);
        for (id, _, _) in &model.nodes {
            let history = store
                .history(session, Some(id.clone()))
                .await
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let got: Vec<String> = history.into_iter().map(|m| m.id).collect();
            prop_assert_eq!(got, model.path(id), "history({}) after {:?}", id, op);
            let children: Vec<String> = store
                .children(session, id)
                .await
                .map_err(|e| TestCaseError::fail(e.to_string()))?
                .into_iter()
                .map(|m| m.id)
                .collect();
            let expected: Vec<String> = model
                .nodes
                .iter()
                .filter(|n| n.1.as_deref() == Some(id.as_str()))
                .map(|n| n.0.clone())
                .collect();
            prop_assert_eq!(children, expected, "children({}) after {:?}", id, op);
        }
        for w in 0..WORDS {
            let Some(index) = index else { break };
            let query = SearchQuery::new(word_of(w))
                .in_session(session.clone())
                .limit(100);
            let hits = search_messages(index, &query)
                .await
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut got: Vec<String> = hits.into_iter().map(|h| h.message_id).collect();
            got.sort();
            let mut expected: Vec<String> = model
                .nodes
                .iter()
                .filter(|n| n.2 == word_of(w))
                .map(|n| n.0.clone())
                .collect();
            expected.sort();
            prop_assert_eq!(got, expected, "search {} after {:?}", word_of(w), op);
        }
    }
    Ok(())
}

/// Runs `cases` random operation sequences against `store` (each in a fresh session) and
/// panics with a shrunk counter-example if the store and the model disagree. With `index`
/// (the `messages` text index that follows the store), search must agree too.
///
/// Call it from a plain `#[test]`, passing the runtime the store was built on.
pub fn check_against_model(
    runtime: &tokio::runtime::Runtime,
    store: &dyn MessageStore,
    index: Option<&dyn TextIndex>,
    cases: u32,
) {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&proptest::collection::vec(op_strategy(), 1..30), |ops| {
        let session = fresh_session("model");
        runtime.block_on(check_sequence(store, index, &session, &ops))
    });
    if let Err(e) = result {
        panic!("message store disagrees with the model: {e}");
    }
}
