//! The registry as loaded at cold start (or, on Lambda, by the first
//! request: [`RegistryCache::unloaded`]), refreshed when older than a bound.
//!
//! A refresh that is only due to age runs in the background: the request that
//! notices it is served the snapshot it has (at most one TTL old, as before),
//! so no request waits for a registry load. A cache marked stale by
//! [`RegistryCache::invalidate`] (a change known to this process) reloads
//! before answering, so a writer reads its own change. A write that only
//! moved latest values ([`RegistryCache::invalidate_latest`]) reloads it
//! before the next answer that shows them, but not before the next ingest,
//! which only asks which room a device is in: a reload per batch was a
//! twentieth of line-protocol ingest.
//!
//! A fleet is not held (issue 76): the load reads at most [`SEED_BOUND`]
//! devices and rooms, a page each. A registry that fits is held whole, as
//! it always was; one that does not leaves the snapshot empty
//! ([`RegistryCache::holds_whole`] says which), lists page from the store
//! (`registry::list`), and ingest asks the store about the devices of its
//! batch only ([`RegistryCache::parse_with_rooms`]), keeping their rooms in
//! a bounded map until the next reload. So neither the first request nor a
//! sandbox's memory grows with the fleet.

use super::known_rooms::KnownRooms;
use domain::model::{DeviceId, FastMap, Reading, RoomId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use storage::{DeviceListRequest, RegistrySnapshot, RoomListRequest, Store, StoreError};

/// Clones share one cache.
#[derive(Clone)]
pub struct RegistryCache {
    inner: Arc<Inner>,
}

/// Most devices and rooms (each) a sandbox holds as its whole registry;
/// past it the registry is read a page or a batch's devices at a time.
/// A household has tens. The load of a fleet reads this many (and finds
/// it is a fleet) in every new sandbox's first request: at 500 that was
/// 15 ms on dynalite, twice a first request's own time, so the bound is
/// 200 (docs/BENCHMARKS.md, "A fleet on DynamoDB").
pub const SEED_BOUND: usize = 200;

/// Most devices whose rooms a sandbox over a fleet keeps between reloads
/// (about 100 bytes each); when full it starts over.
const KEPT_ROOMS: usize = 20_000;

struct Inner {
    state: RwLock<(Arc<RegistrySnapshot>, Instant)>,
    /// Whether the snapshot is the whole registry; clear over a fleet.
    whole: AtomicBool,
    /// Over a fleet: rooms of devices the store was asked about, or that
    /// this process wrote (`None`: registered in no room).
    fleet_rooms: Mutex<FastMap<DeviceId, Option<RoomId>>>,
    /// Serialises reloads so that a burst of requests triggers one.
    reloading: Arc<tokio::sync::Mutex<()>>,
    ttl: Duration,
    /// Set when the registry is known to have changed: reload on next use.
    stale: AtomicBool,
    /// Set when only latest values (and times) changed: reload before
    /// `current`, not before `current_for_rooms`.
    stale_latest: AtomicBool,
    /// Clear until a first load succeeded: until then there is no snapshot
    /// to fall back on, so a failed load is the caller's error.
    loaded: AtomicBool,
}

impl RegistryCache {
    /// Loads the registry (the cold-start load; it also warms the
    /// connection): whole while it fits `SEED_BOUND`.
    pub async fn load<S: Store>(store: &S, ttl: Duration) -> Result<Self, StoreError> {
        let cache = Self::unloaded(ttl);
        cache.ensure_loaded(store).await?;
        Ok(cache)
    }

    /// A cache holding `snapshot` as the whole registry.
    pub fn with_snapshot(snapshot: RegistrySnapshot, ttl: Duration) -> Self {
        Self::holding(snapshot, ttl, true)
    }

    /// A cache with nothing in it yet: [`RegistryCache::ensure_loaded`]
    /// loads it. A Lambda's cold start does no call of its own, as the SDK's
    /// floor does none (issue 43): its first request loads the registry,
    /// which it would have waited for behind the init anyway.
    pub fn unloaded(ttl: Duration) -> Self {
        Self::holding(RegistrySnapshot::default(), ttl, false)
    }

    fn holding(snapshot: RegistrySnapshot, ttl: Duration, loaded: bool) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: RwLock::new((Arc::new(snapshot), Instant::now())),
                whole: AtomicBool::new(true),
                fleet_rooms: Mutex::new(FastMap::default()),
                reloading: Arc::new(tokio::sync::Mutex::new(())),
                ttl,
                stale: AtomicBool::new(false),
                stale_latest: AtomicBool::new(false),
                loaded: AtomicBool::new(loaded),
            }),
        }
    }

    /// Loads the registry if no load has succeeded yet; a load's failure is
    /// the error (no snapshot to serve instead). Requests that arrive during
    /// the first load wait for it; once loaded this is one atomic read.
    pub async fn ensure_loaded<S: Store>(&self, store: &S) -> Result<(), StoreError> {
        let inner = &self.inner;
        if inner.loaded.load(Ordering::Acquire) {
            return Ok(());
        }
        let _guard = inner.reloading.lock().await;
        if !inner.loaded.load(Ordering::Acquire) {
            let fresh = seed(store).await?;
            inner.replace(fresh);
        }
        Ok(())
    }

    /// Whether the snapshot is the whole registry (a household's); over a
    /// fleet it is empty, and what a list or a device needs is read.
    pub fn holds_whole(&self) -> bool {
        self.inner.whole.load(Ordering::Acquire)
    }

    /// The whole registry, for what needs all of it (InfluxQL's schema):
    /// the snapshot where it is held; over a fleet, read from the store.
    pub async fn everything<S: Store>(
        &self,
        store: &S,
    ) -> Result<Arc<RegistrySnapshot>, StoreError> {
        let snapshot = self.current(store).await;
        if self.holds_whole() {
            return Ok(snapshot);
        }
        Ok(Arc::new(store.load_registry().await?))
    }

    /// Runs `parse` with the rooms of the devices it asks about: from the
    /// snapshot when it is whole; over a fleet, from the devices' kept
    /// rooms, and for those not kept, from the store (one read of the
    /// batch's devices), and then `parse` runs again with them.
    pub async fn parse_with_rooms<S: Store, T>(
        &self,
        store: &S,
        parse: impl Fn(&KnownRooms) -> T,
    ) -> Result<T, StoreError> {
        let snapshot = self.current_for_rooms(store).await;
        if self.holds_whole() {
            return Ok(parse(&KnownRooms::whole(snapshot)));
        }
        let kept = KnownRooms::fleet(self.kept_rooms());
        let parsed = parse(&kept);
        let asked = kept.unknown_asked();
        if asked.is_empty() {
            return Ok(parsed);
        }
        let found = store.rooms_of(&asked).await?;
        self.keep_rooms(found.iter().cloned());
        Ok(parse(&kept.with(found)))
    }

    /// Over a fleet, the kept rooms, shared with the parse (a copy: the
    /// map is at most `KEPT_ROOMS`, and a batch's look-ups are few).
    fn kept_rooms(&self) -> Arc<FastMap<DeviceId, Option<RoomId>>> {
        Arc::new(
            self.inner
                .fleet_rooms
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }

    fn keep_rooms(&self, rooms: impl IntoIterator<Item = (DeviceId, Option<RoomId>)>) {
        let mut kept = self
            .inner
            .fleet_rooms
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for (device, room) in rooms {
            if kept.len() >= KEPT_ROOMS {
                kept.clear();
            }
            kept.insert(device, room);
        }
    }

    /// The rooms `readings` would register that this cache may not know
    /// yet (taken before a write, which consumes the readings; empty in
    /// the common case, where every device stays in its room).
    pub fn rooms_in(&self, readings: &[Reading]) -> Vec<(DeviceId, RoomId)> {
        if self.holds_whole() && !self.inner.snapshot().may_move_devices(readings) {
            return Vec::new();
        }
        let mut rooms: Vec<(DeviceId, RoomId)> = Vec::new();
        for r in readings {
            let Some(room) = r.room() else { continue };
            match rooms.last() {
                Some((d, rm)) if *d == r.device_id && rm == room => {}
                _ => rooms.push((r.device_id.clone(), room.clone())),
            }
        }
        rooms
    }

    /// What a store that keeps its registry in the write transaction just
    /// stored (the embedded store): the rooms of the batch's devices
    /// (`rooms_in`) are noted, instead of reloading the registry before the
    /// next batch (a reload per batch of new devices made registering a
    /// fleet quadratic), and latest values are marked stale. A held
    /// registry that outgrows `SEED_BOUND` is given up.
    pub fn wrote(&self, rooms: Vec<(DeviceId, RoomId)>) {
        let inner = &self.inner;
        inner.stale_latest.store(true, Ordering::Release);
        if rooms.is_empty() {
            return;
        }
        if !inner.whole.load(Ordering::Acquire) {
            self.keep_rooms(rooms.into_iter().map(|(d, r)| (d, Some(r))));
            return;
        }
        let mut state = inner.state.write().unwrap_or_else(|p| p.into_inner());
        let snapshot = Arc::make_mut(&mut state.0);
        for (device, room) in rooms {
            snapshot
                .devices
                .entry(device)
                .or_insert_with_key(storage::DeviceRecord::empty)
                .room = Some(room);
        }
        if snapshot.devices.len() > SEED_BOUND {
            *snapshot = RegistrySnapshot::default();
            inner.whole.store(false, Ordering::Release);
        }
    }

    /// Whether a load has succeeded (always, but for [`RegistryCache::unloaded`]).
    pub fn is_loaded(&self) -> bool {
        self.inner.loaded.load(Ordering::Acquire)
    }

    /// The snapshot as it is, without reloading.
    pub fn snapshot(&self) -> Arc<RegistrySnapshot> {
        self.inner.snapshot()
    }

    /// Marks the cache stale, so the next use reloads it before answering (for a
    /// maintainer in the same process that knows when the registry changed).
    pub fn invalidate(&self) {
        self.inner.stale.store(true, Ordering::Release);
    }

    /// Marks only the latest values stale: rooms, devices and names are as
    /// cached. The next `current` reloads first; `current_for_rooms` does not.
    pub fn invalidate_latest(&self) {
        self.inner.stale_latest.store(true, Ordering::Release);
    }

    /// The snapshot, for what room each device is in (ingest): as `current`,
    /// but a cache whose latest values alone are stale is served as it is.
    pub async fn current_for_rooms<S: Store>(&self, store: &S) -> Arc<RegistrySnapshot> {
        self.current_reloaded_if(store, |inner| inner.stale.load(Ordering::Acquire))
            .await
    }

    /// The snapshot. Past its TTL, a background refresh is started and the
    /// current snapshot is returned; when invalidated, it is reloaded first. A
    /// failed reload keeps serving the old snapshot (and is logged).
    pub async fn current<S: Store>(&self, store: &S) -> Arc<RegistrySnapshot> {
        self.current_reloaded_if(store, |inner| {
            inner.stale.load(Ordering::Acquire) || inner.stale_latest.load(Ordering::Acquire)
        })
        .await
    }

    /// The snapshot, reloaded first when `stale` says so.
    async fn current_reloaded_if<S: Store>(
        &self,
        store: &S,
        stale: impl Fn(&Inner) -> bool,
    ) -> Arc<RegistrySnapshot> {
        let inner = &self.inner;
        // Never loaded (a path that skipped `ensure_loaded`): load first.
        let stale = |inner: &Inner| stale(inner) || !inner.loaded.load(Ordering::Acquire);
        if stale(inner) {
            let _guard = inner.reloading.lock().await;
            if stale(inner) {
                inner.reload(store).await;
            }
            return inner.snapshot();
        }
        if inner.age() >= inner.ttl {
            // One refresh at a time; a request that finds one running does not wait.
            if let Ok(guard) = inner.reloading.clone().try_lock_owned() {
                if inner.age() >= inner.ttl {
                    let (inner, store) = (inner.clone(), store.clone());
                    tokio::spawn(async move {
                        inner.reload(&store).await;
                        drop(guard);
                    });
                }
            }
        }
        inner.snapshot()
    }
}

impl Inner {
    fn replace(&self, fresh: Option<RegistrySnapshot>) {
        let whole = fresh.is_some();
        *self.state.write().unwrap_or_else(|p| p.into_inner()) =
            (Arc::new(fresh.unwrap_or_default()), Instant::now());
        // Kept rooms are forgotten with each reload, as a snapshot is.
        self.fleet_rooms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.whole.store(whole, Ordering::Release);
        self.loaded.store(true, Ordering::Release);
    }

    fn snapshot(&self) -> Arc<RegistrySnapshot> {
        self.state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .clone()
    }

    fn age(&self) -> Duration {
        self.state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .elapsed()
    }

    /// Loads the registry. On failure, an invalidated cache stays marked (the
    /// next request tries again); an aged one keeps its age, so a later request
    /// starts another background try.
    async fn reload<S: Store>(&self, store: &S) {
        // Cleared before loading: a change that lands during the load marks it again.
        let latest_was_stale = self.stale_latest.swap(false, Ordering::AcqRel);
        let was_stale = self.stale.swap(false, Ordering::AcqRel);
        match seed(store).await {
            Ok(fresh) => self.replace(fresh),
            Err(err) => {
                if was_stale {
                    self.stale.store(true, Ordering::Release);
                }
                if latest_was_stale {
                    self.stale_latest.store(true, Ordering::Release);
                }
                tracing::warn!(error = %err, "registry reload failed; serving the cached registry");
            }
        }
    }
}

/// The registry as a sandbox holds it: whole, when its devices and its rooms
/// each fit `SEED_BOUND` (one page of each, read side by side); `None` over
/// a fleet.
async fn seed<S: Store>(store: &S) -> Result<Option<RegistrySnapshot>, StoreError> {
    let devices = DeviceListRequest {
        filter: Default::default(),
        after: None,
        limit: SEED_BOUND,
    };
    let rooms = RoomListRequest {
        filter: Default::default(),
        after: None,
        limit: SEED_BOUND,
    };
    let (devices, rooms) =
        futures_util::future::try_join(store.device_page(&devices), store.room_page(&rooms))
            .await?;
    if devices.next.is_some() || rooms.next.is_some() {
        return Ok(None);
    }
    Ok(Some(RegistrySnapshot {
        devices: devices
            .items
            .into_iter()
            .map(|d| (d.device_id.clone(), d))
            .collect(),
        rooms: rooms
            .items
            .into_iter()
            .map(|r| (r.room_id.clone(), r))
            .collect(),
    }))
}
