//! ONNX Runtime, loaded once a process, and a pool of sessions of one graph that runs many
//! independent inputs side by side.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use memory_core::{MemoryError, Result};
use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;

use crate::error::OnnxError;

/// At most this many sessions run side by side (each holds its own copy of the weights).
const MAX_WORKERS: usize = 4;

/// A graph larger than this gets one session spreading each pass over the cores instead of a
/// session per core, so memory holds its weights once (a base-size model's graph is 400 MB
/// to 1.1 GB).
const ONE_SESSION_ABOVE_BYTES: u64 = 200_000_000;

pub(crate) fn backend(err: impl Into<OnnxError>) -> MemoryError {
    err.into().into()
}

/// The process's one ONNX Runtime environment, loaded from the first library asked for.
static ENVIRONMENT: Mutex<Option<(PathBuf, Environment)>> = Mutex::new(None);

/// The lock of `mutex`, also after a panic elsewhere (what it guards stays consistent: a
/// session between runs, or the environment slot, which is written once).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn environment(runtime: &Path) -> Result<Environment> {
    // An absolute path: the runtime resolves a relative one beside the executable instead.
    let runtime = &std::fs::canonicalize(runtime).map_err(|err| {
        MemoryError::backend(
            crate::error::BACKEND,
            format!("ONNX Runtime's library {}: {err}", runtime.display()),
        )
    })?;
    let mut slot = lock(&ENVIRONMENT);
    if let Some((loaded, environment)) = slot.as_ref() {
        if loaded != runtime {
            tracing::warn!(
                loaded = %loaded.display(),
                asked = %runtime.display(),
                "ONNX Runtime is loaded once per process; the library loaded first is used"
            );
        }
        return Ok(environment.clone());
    }
    let environment = ort::init_from(runtime)
        .map_err(backend)?
        .with_name("agent-memory")
        .build()
        .map_err(backend)?;
    *slot = Some((runtime.to_owned(), environment.clone()));
    Ok(environment)
}

/// One single-threaded session of a graph per core (at most four), which on small inputs
/// outruns one session spreading each pass over the cores; a graph above 200 MB gets one
/// session using every core, so its weights are in memory once. Each input is one pass of its
/// own, so a result never depends on the inputs beside it.
pub(crate) struct SessionPool {
    sessions: Vec<Mutex<Session>>,
}

impl SessionPool {
    /// Sessions of the graph in `model` on the runtime library `runtime`.
    pub(crate) fn load(model: &Path, runtime: &Path) -> Result<Self> {
        let environment = environment(runtime)?;
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let large = std::fs::metadata(model).is_ok_and(|m| m.len() > ONE_SESSION_ABOVE_BYTES);
        let workers = match large {
            true => 1,
            false => cores.clamp(1, MAX_WORKERS),
        };
        let threads = (cores / workers).max(1);
        let sessions = (0..workers)
            .map(|_| {
                Session::builder(&environment)
                    .map_err(backend)?
                    .with_optimization_level(GraphOptimizationLevel::Level3)
                    .map_err(|e| backend(ort::Error::from(e)))?
                    .with_intra_threads(threads)
                    .map_err(|e| backend(ort::Error::from(e)))?
                    .commit_from_file(model)
                    .map(Mutex::new)
                    .map_err(backend)
            })
            .collect::<Result<Vec<_>>>()?;
        if sessions.is_empty() {
            return Err(backend(OnnxError::Output("no session was made".to_owned())));
        }
        Ok(Self { sessions })
    }

    /// The first session (to read the graph's inputs, outputs and metadata).
    pub(crate) fn first(&self) -> MutexGuard<'_, Session> {
        lock(&self.sessions[0])
    }

    /// Whether the graph takes an input named `name`.
    pub(crate) fn takes(&self, name: &str) -> bool {
        self.first()
            .inputs()
            .iter()
            .any(|input| input.name() == name)
    }

    /// `run(session, i)` for each `i` in `order`, spread over the sessions; the results in
    /// input order (`result[i]` for input `i`, `order` a permutation of `0..order.len()`,
    /// longest first so the workers finish together).
    pub(crate) fn run_all<T: Send>(
        &self,
        order: &[usize],
        run: impl Fn(&mut Session, usize) -> Result<T> + Sync,
    ) -> Result<Vec<T>> {
        let next = AtomicUsize::new(0);
        let work = |worker: usize| -> Result<Vec<(usize, T)>> {
            let mut session = self.free_session(worker);
            let mut done = Vec::new();
            while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                done.push((i, run(&mut session, i)?));
            }
            Ok(done)
        };
        let workers = self.sessions.len().min(order.len());
        let done = std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..workers).map(|w| scope.spawn(move || work(w))).collect();
            let mine = work(0);
            // Every helper is joined before an error is returned (a helper left unjoined
            // would turn its panic into the scope's).
            let theirs: Vec<_> = helpers.into_iter().map(|helper| helper.join()).collect();
            let mut done = mine?;
            for result in theirs {
                done.extend(result.map_err(|_| backend(OnnxError::Worker))??);
            }
            Ok::<_, MemoryError>(done)
        })?;
        let mut slots: Vec<Option<T>> = (0..order.len()).map(|_| None).collect();
        for (i, value) in done {
            slots[i] = Some(value);
        }
        slots
            .into_iter()
            .map(|slot| slot.ok_or_else(|| backend(OnnxError::Worker)))
            .collect()
    }

    /// A session no other worker holds, else worker `worker`'s own (waiting for it).
    fn free_session(&self, worker: usize) -> MutexGuard<'_, Session> {
        let count = self.sessions.len();
        (0..count)
            .find_map(|k| self.sessions[(worker + k) % count].try_lock().ok())
            .unwrap_or_else(|| lock(&self.sessions[worker % count]))
    }
}
