import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Copies the WAL into the database beside the writer, and syncs the file, on a connection and a
/// queue of its own, so that the writer's own checkpoint finds little left to copy or sync.
///
/// A checkpoint copies the pages the WAL holds into the database file and syncs that file (when it
/// copied up to the WAL's end); in WAL mode SQLite runs it on the connection that committed, after
/// its commit, once the WAL holds `wal_autocheckpoint` pages. With the writer's 64 MiB WAL that
/// took the writer 5–21 ms every half second under load, the larger the database the longer (mostly
/// its sync), and every operation waiting for the writer waited that long: most of the tail of a
/// spend's latency. Here the writer's connection asks, after a commit that left `step` more frames
/// in the WAL than when the last pass was asked for, for a passive pass on this connection, which
/// copies what the writer has committed without holding it up (SQLite lets one connection
/// checkpoint while another writes). The writer still checkpoints itself once the WAL holds
/// `writerLimit` frames, as SQLite did: only a checkpoint after which nothing is left to copy lets
/// the next transaction write the WAL from its start again, and under steady writes the passes
/// never quite catch up. That checkpoint now copies and syncs what came since the last pass, not
/// the whole WAL. While a pass runs, the writer's checkpoint is refused at once (one checkpoint at
/// a time) and tried again after its next commit, so the WAL may run a few commits past
/// `writerLimit`.
///
/// A process counts from the WAL it found: its first commit asks for no pass, so a command that
/// writes once beside `wallet serve` leaves the passes to the server. The hook replaces
/// SQLite's autocheckpoint on the writer's connection (`sqlite3_wal_hook`); it holds this
/// object unretained, and the writer's `prepareDatabase` closure, which the pool keeps as long
/// as any of its connections, holds it strongly, so it outlives the connection that calls it.
final class WALCheckpointer: Sendable {
    /// Frames (pages) committed to the WAL since the last pass that ask for the next: 8 MiB, an
    /// eighth of the writer's limit. At 16 MiB the writer's own checkpoints copy twice as much,
    /// and a spend's p99 grew again with the size of the database (README "Tenth sitting").
    package static let step: Int32 = 2_048
    /// The WAL's size in frames from which the writer checkpoints itself after its commit:
    /// 64 MiB, the `wal_autocheckpoint` the writer had before.
    package static let writerLimit: Int32 = 16_384

    /// Checkpoints a pass runs at most after its first to catch up with the writer (`pass`).
    static let catchUpsMax = 8

    let step: Int32
    let writerLimit: Int32
    private let queue = DispatchQueue(label: "wallet.wal-checkpoint")
    /// The database file, as the writer's connection opened it (set by `install`), and the
    /// passes' connection, opened by the first pass and again after one failed; used on
    /// `queue`, and by `deinit`, which closes it.
    private let connection = Mutex<(path: String?, handle: OpaquePointer?)>((nil, nil))
    /// A pass is asked for or running.
    private let passUnderWay = Atomic<Bool>(false)
    /// The WAL's frames when the last pass was asked for, -1 before the writer's first commit;
    /// used only by the writer's hook, after its commits, one at a time.
    private let askedAt = Atomic<Int32>(-1)
    /// Passes done; passes that copied nothing because SQLite refused (another checkpoint under
    /// way, an I/O error, a connection that could not open); checkpoints the passes that copied
    /// ran, catching up included (a refused one too); passes that synced the database file after
    /// copying; the frames of the WAL the latest pass left copied into the database.
    private let counts = Mutex((passes: 0, refused: 0, checkpoints: 0, synced: 0, copied: CInt(0)))

    init(step: Int32 = WALCheckpointer.step, writerLimit: Int32 = WALCheckpointer.writerLimit) {
        precondition(step >= 1 && writerLimit >= 1, "a checkpoint copies at least one frame")
        self.step = step
        self.writerLimit = writerLimit
    }

    deinit {
        connection.withLock { connection in
            if let handle = connection.handle { sqlite3_close_v2(handle) }
        }
    }

    /// Whether a pass is asked for or running.
    var passing: Bool { passUnderWay.load(ordering: .acquiring) }

    /// Passes run so far, how many of them SQLite refused, the checkpoints the others ran, how
    /// many synced the database file after copying, and the WAL's frames the latest pass found
    /// copied into the database (those of the WAL as its last checkpoint found it).
    var passes: (done: Int, refused: Int, checkpoints: Int, synced: Int, copied: Int) {
        counts.withLock { ($0.passes, $0.refused, $0.checkpoints, $0.synced, Int($0.copied)) }
    }

    /// Puts this checkpointer's hook on the writer's connection, in place of SQLite's
    /// autocheckpoint.
    func install(on db: Database) {
        if let name = sqlite3_db_filename(db.sqliteConnection, "main") {
            let path = String(cString: name)
            connection.withLock { $0.path = path }
        }
        sqlite3_wal_hook(db.sqliteConnection, { context, db, name, frames in
            guard let context else { return SQLITE_OK }
            let checkpointer = Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
            checkpointer.committed(frames: frames)
            // What SQLite's autocheckpoint did: a passive checkpoint by the connection that
            // committed. Its failure is no failure of the commit, which is durable already.
            if frames >= checkpointer.writerLimit { sqlite3_wal_checkpoint(db, name) }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// After a commit that left `frames` frames in the WAL: asks for a pass once `step` more
    /// frames than at the last one are there, unless one is still under way.
    private func committed(frames: Int32) {
        var since = askedAt.load(ordering: .relaxed)
        // The first commit of this process, or the WAL started again from its first frame.
        if since < 0 || frames < since {
            since = since < 0 ? frames : 0
            askedAt.store(since, ordering: .relaxed)
        }
        guard frames - since >= step,
            passUnderWay.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        askedAt.store(frames, ordering: .relaxed)
        queue.async { [self] in
            pass()
            passUnderWay.store(false, ordering: .releasing)
        }
    }

    /// Copies into the database what the WAL holds, as far as no reader still needs the older pages
    /// (`SQLITE_CHECKPOINT_PASSIVE`: it waits for no one), syncing the WAL before (at any
    /// `synchronous` but OFF; FULL here); copies again what the writer committed meanwhile, up
    /// to `catchUpsMax` times; then syncs the database file (`syncDatabaseFile`). Under steady
    /// writes the writer's own checkpoint so finds less to copy and little to sync: on a ledger
    /// grown by 2,000,000 spends, a spend's p99 fell from 58–64 ms to 19.4 ms (README "Twelfth
    /// sitting"). A connection that cannot be opened, or whose first checkpoint failed other than
    /// by finding another checkpoint under way, is closed and opened again by the next pass; a
    /// failure while catching up only ends it (the next pass's first checkpoint meets the
    /// failure again if it lasts). Meanwhile the writer checkpoints as before.
    private func pass() {
        let done: (copied: CInt, checkpoints: Int, synced: Bool)? = connection.withLock { connection in
            if connection.handle == nil {
                guard let path = connection.path else { return nil }
                var opened: OpaquePointer?
                // A new connection knows the file is in WAL mode only once it has read it:
                // until then its checkpoint does nothing (and says so), so it reads at once.
                guard sqlite3_open_v2(path, &opened, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let opened,
                    sqlite3_exec(opened, "PRAGMA synchronous = FULL", nil, nil, nil) == SQLITE_OK,
                    sqlite3_exec(opened, "SELECT count(*) FROM sqlite_master", nil, nil, nil) == SQLITE_OK
                else {
                    sqlite3_close_v2(opened)
                    return nil
                }
                connection.handle = opened
            }
            var inLog: CInt = -1
            var copied: CInt = -1
            let code = sqlite3_wal_checkpoint_v2(connection.handle, "main", SQLITE_CHECKPOINT_PASSIVE, &inLog, &copied)
            guard code == SQLITE_OK, copied >= 0 else {
                if code != SQLITE_BUSY {
                    sqlite3_close_v2(connection.handle)
                    connection.handle = nil
                }
                return nil
            }
            // Then what the writer committed meanwhile, while it is little, until a checkpoint
            // finds the WAL as the one before it found it (nothing was committed since: that one
            // copied up to the end, unless a reader held pages back) or `catchUpsMax` ran; one
            // refused ends the catching up. `checkpoints` counts those run, refused or not.
            var found: CInt = -1
            var checkpoints = 1
            while checkpoints <= Self.catchUpsMax, inLog != found {
                found = inLog
                checkpoints += 1
                var more: (inLog: CInt, copied: CInt) = (-1, -1)
                let code = sqlite3_wal_checkpoint_v2(connection.handle, "main", SQLITE_CHECKPOINT_PASSIVE, &more.inLog, &more.copied)
                guard code == SQLITE_OK, more.copied >= 0 else { break }
                (inLog, copied) = more
            }
            return (copied, checkpoints, Self.syncDatabaseFile(of: connection.handle))
        }
        counts.withLock { counts in
            counts.passes += 1
            guard let done else {
                counts.refused += 1
                return
            }
            counts.copied = done.copied
            counts.checkpoints += done.checkpoints
            if done.synced { counts.synced += 1 }
        }
    }

    /// Syncs the database file through `handle`'s own file (SQLite's VFS, as a checkpoint
    /// syncs it); whether the sync succeeded. SQLite syncs the file after a passive checkpoint
    /// only when it copied up to the WAL's end as it still is then, which under steady writes a
    /// pass, caught up or not, need not have done (a commit during its last checkpoint,
    /// `catchUpsMax` reached, a reader holding pages back). Before passes caught up, the pages
    /// they copied mostly stayed unsynced until the writer's own checkpoint reached the WAL's end
    /// and synced them all, for 17 ms at the median and 42 ms at p99 on a ledger of 600 MiB,
    /// while every write waited (README "Eleventh sitting"). When SQLite did sync, this one
    /// finds nothing left to write. Nothing depends on it for durability: the writer still
    /// starts the WAL again only after a checkpoint that synced.
    private static func syncDatabaseFile(of handle: OpaquePointer?) -> Bool {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
            let file, let sync = file.pointee.pMethods?.pointee.xSync
        else { return false }
        return sync(file, SQLITE_SYNC_NORMAL) == SQLITE_OK
    }
}
