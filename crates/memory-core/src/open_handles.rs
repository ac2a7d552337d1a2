//! A bounded set of open per-profile handles (databases, indexes), shared by the adapters
//! that keep something open for each profile in process.
//!
//! A deployment with 100,000 profiles must not keep 100,000 databases open: each holds
//! threads, file descriptors and caches. [`OpenHandles`] keeps at most `capacity` of them,
//! closes the least recently used one to make room, and hands back the ones unused for
//! `idle` so that their owner closes them. A handle still in use (its owner says so, for
//! example because an `Arc` of it is held outside) is never taken: when every handle is in
//! use and there is no room, [`OpenHandles::make_room`] says so and the owner answers with a
//! transient error (a 503 over HTTP), never by opening one more.
//!
//! It is a plain data structure: its owner locks it, opens and closes the handles.
//!
//! ```
//! use memory_core::open_handles::OpenHandles;
//! use std::sync::Arc;
//! use std::time::{Duration, Instant};
//!
//! let mut open: OpenHandles<Arc<String>> = OpenHandles::new(2, Duration::from_secs(60));
//! let now = Instant::now();
//! open.insert("a", Arc::new("db a".to_owned()), now);
//! open.insert("b", Arc::new("db b".to_owned()), now);
//! let held = open.get("a", now).unwrap(); // "a" is in use while `held` lives
//! let closed = open.make_room(|h| Arc::strong_count(h) > 1).unwrap();
//! assert_eq!(closed.len(), 1); // "b", the one not in use
//! assert!(open.get("b", now).is_none());
//! drop(held);
//! ```

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Profiles an adapter keeps open at once unless configured otherwise (`[storage]
/// open_profiles`).
pub const DEFAULT_OPEN_PROFILES: usize = 16;

/// How long an unused profile stays open unless configured otherwise (`[storage]
/// profile_idle_secs`).
pub const DEFAULT_PROFILE_IDLE: Duration = Duration::from_secs(30);

/// How often an owner looks for handles unused for `idle`: twice per idle time, between one
/// second and a minute.
pub fn sweep_interval(idle: Duration) -> Duration {
    (idle / 2).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// At most `capacity` open handles by profile (see the [module](self) documentation).
#[derive(Debug)]
pub struct OpenHandles<H> {
    capacity: usize,
    idle: Duration,
    entries: HashMap<String, Entry<H>>,
    /// Increases with every use: the smallest `used` is the least recently used entry.
    clock: u64,
}

#[derive(Debug)]
struct Entry<H> {
    handle: H,
    used: u64,
    at: Instant,
}

/// Every open handle is in use and there is no room for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllInUse {
    /// How many handles are open (the capacity).
    pub open: usize,
}

impl<H> OpenHandles<H> {
    /// Room for `capacity` handles (at least 1); a handle unused for `idle` is handed back by
    /// [`OpenHandles::take_idle`].
    pub fn new(capacity: usize, idle: Duration) -> Self {
        Self {
            capacity: capacity.max(1),
            idle,
            entries: HashMap::new(),
            clock: 0,
        }
    }

    /// The most handles kept open.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many handles are open.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no handle is open.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The handle of `key`, marked as used now.
    pub fn get(&mut self, key: &str, now: Instant) -> Option<H>
    where
        H: Clone,
    {
        self.clock += 1;
        let entry = self.entries.get_mut(key)?;
        entry.used = self.clock;
        entry.at = now;
        Some(entry.handle.clone())
    }

    /// Whether `key` has an open handle (without marking it used).
    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// Makes room for one more handle: while the set is full, takes out the least recently
    /// used handle that `in_use` says is not in use, and returns those taken (for the caller
    /// to close). Fails, taking nothing, when the set is full and every handle is in use.
    pub fn make_room(&mut self, in_use: impl Fn(&H) -> bool) -> Result<Vec<H>, AllInUse> {
        let needed = (self.entries.len() + 1).saturating_sub(self.capacity);
        if needed == 0 {
            return Ok(Vec::new());
        }
        let mut free: Vec<(u64, &String)> = self
            .entries
            .iter()
            .filter(|(_, entry)| !in_use(&entry.handle))
            .map(|(key, entry)| (entry.used, key))
            .collect();
        if free.len() < needed {
            return Err(AllInUse {
                open: self.entries.len(),
            });
        }
        free.sort_unstable();
        let oldest: Vec<String> = free
            .into_iter()
            .take(needed)
            .map(|(_, k)| k.clone())
            .collect();
        Ok(oldest
            .into_iter()
            .filter_map(|key| self.entries.remove(&key).map(|entry| entry.handle))
            .collect())
    }

    /// Adds the handle of `key`, marked as used now (the caller made room first); returns the
    /// handle it replaces, if any, for the caller to close.
    pub fn insert(&mut self, key: &str, handle: H, now: Instant) -> Option<H> {
        self.clock += 1;
        let entry = Entry {
            handle,
            used: self.clock,
            at: now,
        };
        self.entries
            .insert(key.to_owned(), entry)
            .map(|old| old.handle)
    }

    /// Takes out the handle of `key` (a profile being deleted), for the caller to close.
    pub fn remove(&mut self, key: &str) -> Option<H> {
        self.entries.remove(key).map(|entry| entry.handle)
    }

    /// Takes out every handle unused for [`OpenHandles::idle`] that `in_use` says is not in
    /// use, for the caller to close.
    pub fn take_idle(&mut self, now: Instant, in_use: impl Fn(&H) -> bool) -> Vec<(String, H)> {
        let idle: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, entry)| {
                now.saturating_duration_since(entry.at) >= self.idle && !in_use(&entry.handle)
            })
            .map(|(key, _)| key.clone())
            .collect();
        idle.into_iter()
            .filter_map(|key| self.entries.remove(&key).map(|entry| (key, entry.handle)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;

    fn in_use(handle: &Arc<u32>) -> bool {
        Arc::strong_count(handle) > 1
    }

    #[test]
    fn the_least_recently_used_handle_not_in_use_makes_room() {
        let now = Instant::now();
        let mut open = OpenHandles::new(3, Duration::from_secs(60));
        for (i, key) in ["a", "b", "c"].into_iter().enumerate() {
            assert!(open.make_room(in_use).unwrap().is_empty());
            open.insert(key, Arc::new(i as u32), now);
        }
        // "a" is used again, "b" is held: "c" is the least recently used one not in use.
        open.get("a", now).unwrap();
        let held = open.get("b", now).unwrap();
        let taken = open.make_room(in_use).unwrap();
        assert_eq!(taken.iter().map(|h| **h).collect::<Vec<_>>(), vec![2]);
        assert!(open.contains("a") && open.contains("b") && !open.contains("c"));
        drop(held);
    }

    #[test]
    fn a_full_set_of_handles_in_use_refuses_and_takes_nothing() {
        let now = Instant::now();
        let mut open = OpenHandles::new(2, Duration::from_secs(60));
        open.insert("a", Arc::new(1), now);
        open.insert("b", Arc::new(2), now);
        let held = (open.get("a", now).unwrap(), open.get("b", now).unwrap());
        assert_eq!(open.make_room(in_use), Err(AllInUse { open: 2 }));
        assert_eq!(open.len(), 2);
        drop(held);
        assert_eq!(open.make_room(in_use).unwrap().len(), 1);
        assert_eq!(open.len(), 1);
    }

    #[test]
    fn idle_handles_not_in_use_are_handed_back() {
        let start = Instant::now();
        let mut open = OpenHandles::new(8, Duration::from_secs(10));
        open.insert("old", Arc::new(1), start);
        open.insert("held", Arc::new(2), start);
        open.insert("recent", Arc::new(3), start + Duration::from_secs(8));
        let held = open.get("held", start).unwrap();
        let taken = open.take_idle(start + Duration::from_secs(11), in_use);
        assert_eq!(
            taken.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            vec!["old"]
        );
        assert!(open.contains("held") && open.contains("recent"));
        drop(held);
        assert_eq!(
            open.take_idle(start + Duration::from_secs(30), in_use)
                .len(),
            2
        );
        assert!(open.is_empty());
    }

    #[test]
    fn capacity_is_at_least_one() {
        let mut open: OpenHandles<Arc<u32>> = OpenHandles::new(0, Duration::ZERO);
        assert_eq!(open.capacity(), 1);
        open.insert("a", Arc::new(1), Instant::now());
        assert_eq!(open.make_room(in_use).unwrap().len(), 1);
    }
}
