// What SQLite itself can do for the wallet's spend, without Swift or GRDB: the statements a
// spend runs, prepared once, `synchronous=FULL`, WAL, N operations per commit. It gives the
// ceiling that `wallet bench` is measured against in README "Performance".
//
// The spend's statements as they are now (the default, `--statements=lots`): the idempotency
// lookup, the account lookup, the wallet's open lots read in burn order (`lots_burn`, stopping at
// the first lot that covers the spend), its expired open holds, the transaction row, both postings
// in one statement, the idempotency key, the drawn lot updated and the breakdown row; each changed
// balance written once when the batch ends, all in one statement (an UPDATE joined from a
// VALUES list), as `BatchContext.writeBalances` does. Each wallet
// starts with `--lots-per-wallet` paid lots (default 1) holding its billion credits; with
// `--bonus-lots`, with one paid lot holding the billion and N one-credit bonus lots expiring in
// 300 days, each given by its own bonus transaction (row, two postings, idempotency key), as
// `wallet bench --lots-per-wallet N` seeds them: a spend of 3 then draws three bonus lots (each
// updated, emptied out of `lots_burn`, and given its breakdown row) on a ledger of the bench's size.
// `--statements=before-lots` runs the statement set from before credit lots: no lot or hold
// read, no lot written, two posting inserts and two balance updates per operation.
//
// The WAL is checkpointed as the wallet does it (the default, `--checkpoints=wallet`,
// `WALCheckpointer`): each 2,048 frames the writer asks a thread with a connection of its own for
// a pass (a passive checkpoint, up to eight more while the WAL moved on, then a sync of the
// database file), and the writer checkpoints itself after a commit that left 16,384 frames or more.
// `--checkpoints=none` checkpoints nothing while timing, as this program did before 2026-11-28:
// the WAL then grows by every page written, and no checkpoint's copying or sync is paid.
//
// Build and run through Tests/Load/sqlite-ceiling.sh. Usage:
//   sqlite-ceiling DB SCHEMA.sql BATCH OPERATIONS PLAYERS KEYS SAVEPOINTS [--statements=lots|before-lots] [--lots-per-wallet=N] [--bonus-lots]
//                  [--checkpoints=wallet|none]
//   PLAYERS: distinct wallets spent from; KEYS: "random" or "sequential" idempotency keys;
//   SAVEPOINTS: 1 to wrap each operation in a savepoint as the group commit does, 0 not to.
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static sqlite3 *db;
static long frames, commits, lastFrames;

static void check(int code, int line) {
    if (code == SQLITE_OK || code == SQLITE_DONE || code == SQLITE_ROW) return;
    fprintf(stderr, "sqlite error %d at line %d: %s\n", code, line, sqlite3_errmsg(db));
    exit(1);
}
#define CHECK(call) check((call), __LINE__)

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *statement;
    CHECK(sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, NULL));
    return statement;
}

static void run(sqlite3_stmt *statement) {
    int code = sqlite3_step(statement);
    check(code, __LINE__);
    sqlite3_reset(statement);
}

// The batch's balances in one statement, as `BatchContext.writeBalances` writes them: an UPDATE
// joined from a VALUES list of (id, balance), padded to a power of two with its last row again,
// one prepared statement per size. `ids` and `values` hold `count` rows (at most 512 a call).
static void writeBalances(const long long *ids, const long long *values, int count) {
    static sqlite3_stmt *bySize[10];
    if (count == 0) return;
    int size = 2, slot = 1;
    while (size < count) { size *= 2; slot++; }
    if (count == 1) { size = 1; slot = 0; }
    if (!bySize[slot]) {
        char *sql = malloc(128 + 48 * size);
        strcpy(sql, size == 1 ? "UPDATE accounts SET balance = ?2 WHERE id = ?1" : "UPDATE accounts SET balance = changed.column2 FROM (VALUES ");
        for (int row = 0; size > 1 && row < size; row++) strcat(sql, row ? ", (CAST(? AS BIGINT), CAST(? AS BIGINT))" : "(CAST(? AS BIGINT), CAST(? AS BIGINT))");
        if (size > 1) strcat(sql, ") AS changed WHERE accounts.id = changed.column1");
        bySize[slot] = prepare(sql);
        free(sql);
    }
    for (int row = 0; row < size; row++) {
        int from = row < count ? row : count - 1;
        sqlite3_bind_int64(bySize[slot], 2 * row + 1, ids[from]);
        sqlite3_bind_int64(bySize[slot], 2 * row + 2, values[from]);
    }
    run(bySize[slot]);
}

// The wallet's checkpoints (`--checkpoints=wallet`): the passes' thread, what it was asked, and
// what was done. `passBusy` is set by the writer's hook when it asks for a pass and cleared by the
// thread when the pass is done, as `WALCheckpointer.passUnderWay`.
static int checkpointsAsWallet = 1, passBusy, passAsked, passesStopping;
static long askedAt = -1, passes, writerCheckpoints;
static pthread_mutex_t passLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t passSignal = PTHREAD_COND_INITIALIZER;

// Counts the WAL frames (pages) each commit wrote; with the wallet's checkpoints, asks for a
// pass each 2,048 frames and checkpoints on the writer from 16,384, as `WALCheckpointer` does.
static int walHook(void *unused, sqlite3 *connection, const char *name, int pages) {
    frames += pages > lastFrames ? pages - lastFrames : pages;
    lastFrames = pages;
    commits++;
    if (!checkpointsAsWallet) return SQLITE_OK;
    if (askedAt < 0 || pages < askedAt) askedAt = askedAt < 0 ? pages : 0;
    if (pages - askedAt >= 2048 && !__atomic_exchange_n(&passBusy, 1, __ATOMIC_ACQ_REL)) {
        askedAt = pages;
        pthread_mutex_lock(&passLock);
        passAsked = 1;
        pthread_cond_signal(&passSignal);
        pthread_mutex_unlock(&passLock);
    }
    // Refused at once while a pass runs (SQLITE_BUSY), and tried again after the next commit.
    if (pages >= 16384 && sqlite3_wal_checkpoint(connection, name) == SQLITE_OK) writerCheckpoints++;
    return SQLITE_OK;
}

// The passes, on a connection of their own, as `WALCheckpointer.pass` runs them.
static void *passThread(void *path) {
    sqlite3 *connection;
    if (sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK
        || sqlite3_busy_timeout(connection, 5000) != SQLITE_OK
        || sqlite3_exec(connection, "PRAGMA synchronous = FULL; SELECT count(*) FROM sqlite_master", 0, 0, 0) != SQLITE_OK) {
        fprintf(stderr, "the passes' connection: %s\n", sqlite3_errmsg(connection));
        exit(1);
    }
    for (;;) {
        pthread_mutex_lock(&passLock);
        while (!passAsked && !passesStopping) pthread_cond_wait(&passSignal, &passLock);
        int stop = !passAsked;
        passAsked = 0;
        pthread_mutex_unlock(&passLock);
        if (stop) break;
        int inLog, copied;
        if (sqlite3_wal_checkpoint_v2(connection, "main", SQLITE_CHECKPOINT_PASSIVE, &inLog, &copied) == SQLITE_OK && copied >= 0) {
            for (int more = 0, found = -1; more < 8 && inLog != found; more++) {
                found = inLog;
                if (sqlite3_wal_checkpoint_v2(connection, "main", SQLITE_CHECKPOINT_PASSIVE, &inLog, &copied) != SQLITE_OK) break;
            }
            sqlite3_file *file = NULL;
            if (sqlite3_file_control(connection, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK && file && file->pMethods
                && file->pMethods->xSync)
                file->pMethods->xSync(file, SQLITE_SYNC_NORMAL);
            passes++;
        }
        __atomic_store_n(&passBusy, 0, __ATOMIC_RELEASE);
    }
    sqlite3_close(connection);
    return NULL;
}

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

// A one-number PRAGMA's answer.
static long long pragma(sqlite3 *db, const char *sql) {
    sqlite3_stmt *statement;
    long long value = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &statement, NULL) == SQLITE_OK && sqlite3_step(statement) == SQLITE_ROW) value = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    return value;
}

// The burn order of `LotRules.burnSorted` (WalletCore), as `LotStorage` reads it: expiring lots
// first by expiry, then the other free lots, purchase lots last, each oldest first.
#define BURN_ORDER "CASE WHEN expires_at IS NOT NULL THEN 0 WHEN category = 'paid' THEN 2 ELSE 1 END, expires_at, created_at, id"

int main(int argc, char **argv) {
    int beforeLots = 0, lotsPerWallet = 1, bonusLots = 0, positional = 0;
    char *arguments[8] = {argv[0]};
    for (int index = 1; index < argc; index++) {
        if (strcmp(argv[index], "--statements=before-lots") == 0) beforeLots = 1;
        else if (strcmp(argv[index], "--statements=lots") == 0) beforeLots = 0;
        else if (strncmp(argv[index], "--lots-per-wallet=", 18) == 0) lotsPerWallet = atoi(argv[index] + 18);
        else if (strcmp(argv[index], "--bonus-lots") == 0) bonusLots = 1;
        else if (strcmp(argv[index], "--checkpoints=wallet") == 0) checkpointsAsWallet = 1;
        else if (strcmp(argv[index], "--checkpoints=none") == 0) checkpointsAsWallet = 0;
        else if (positional < 7) arguments[++positional] = argv[index];
        else positional = 8;
    }
    if (positional != 7 || lotsPerWallet < 1 || (bonusLots && beforeLots)) {
        fprintf(stderr, "usage: %s DB SCHEMA.sql BATCH OPERATIONS PLAYERS random|sequential SAVEPOINTS(0|1) [--statements=lots|before-lots] [--lots-per-wallet=N] [--bonus-lots] [--checkpoints=wallet|none]\n", argv[0]);
        return 64;
    }
    argv = arguments;
    const char *path = argv[1];
    int batch = atoi(argv[3]), operations = atoi(argv[4]), players = atoi(argv[5]);
    int sequentialKeys = strcmp(argv[6], "sequential") == 0, savepoints = atoi(argv[7]);
    if (batch < 1 || operations < 1 || players < 1) return 64;

    FILE *file = fopen(argv[2], "r");
    if (!file) { perror(argv[2]); return 1; }
    static char schema[1 << 20];
    schema[fread(schema, 1, sizeof schema - 1, file)] = 0;
    fclose(file);

    remove(path);
    CHECK(sqlite3_open(path, &db));
    CHECK(sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;"
                           "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 16384;", 0, 0, 0));
    CHECK(sqlite3_exec(db, schema, 0, 0, 0));
    // The wallet inserts the kinds it knows each time it opens a database; the bare schema lists none.
    sqlite3_exec(db, "INSERT OR IGNORE INTO transaction_kinds (kind) VALUES ('spend'), ('adjustment'), ('bonus')", 0, 0, 0);
    CHECK(sqlite3_exec(db, "BEGIN; INSERT INTO accounts (owner, currency, balance) VALUES ('@spend', 'credits', 0)", 0, 0, 0));
    if (bonusLots) CHECK(sqlite3_exec(db, "INSERT INTO accounts (owner, currency, balance) VALUES ('@bonuses', 'credits', 0)", 0, 0, 0));
    const char *hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    long long seq = 0;
    if (!beforeLots) {
        // One support credit that every seeded lot names as its source.
        CHECK(sqlite3_exec(db, "INSERT INTO transactions (seq, id, kind, player_id, currency, amount, actor, created_at, reason_code, note, prev_hash, hash)"
                               " VALUES (1, '00000000-0000-4000-8000-000000000000', 'adjustment', 'seed', 'credits', 0, 'bench',"
                               " '2026-11-22T00:00:00.000Z', 'seed', 'seed', '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',"
                               " '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef')", 0, 0, 0));
        seq = 1;
    }
    sqlite3_stmt *seedLot = beforeLots ? NULL : prepare(
        "INSERT INTO lots (account_id, category, amount, remaining, created_at, source_seq) VALUES (?, 'paid', ?, ?, '2026-11-22T00:00:00.000Z', 1)");
    for (int player = 0; player < players; player++) {
        char sql[200];
        snprintf(sql, sizeof sql, "INSERT INTO accounts (owner, currency, balance) VALUES ('player:player-%d', 'credits', %lld)",
                 player, 1000000000LL + (bonusLots ? lotsPerWallet : 0));
        CHECK(sqlite3_exec(db, sql, 0, 0, 0));
        long long accountID = sqlite3_last_insert_rowid(db), left = 1000000000;
        for (int lot = 0; seedLot && lot < (bonusLots ? 1 : lotsPerWallet); lot++) {
            long long amount = bonusLots || lot == lotsPerWallet - 1 ? left : 1000000000 / lotsPerWallet;
            left -= amount;
            sqlite3_bind_int64(seedLot, 1, accountID);
            sqlite3_bind_int64(seedLot, 2, amount);
            sqlite3_bind_int64(seedLot, 3, amount);
            run(seedLot);
        }
    }
    CHECK(sqlite3_exec(db, "COMMIT", 0, 0, 0));
    if (bonusLots) {
        // Each wallet's one-credit bonus lots, each from its own bonus transaction, given round
        // robin over the wallets (as the bench's callers give them), 10,000 to a commit. Their
        // ids come from another random sequence than the timed spends' (srand(1) below).
        srand(2);
        sqlite3_stmt *bonus = prepare(
            "INSERT INTO transactions (seq, id, kind, player_id, currency, amount, actor, created_at, idempotency_key, reason_code, prev_hash, hash)"
            " VALUES (?, ?, 'bonus', ?, 'credits', 1, 'bench', '2026-11-22T00:00:00.000Z', ?, 'bench', ?, ?)");
        sqlite3_stmt *legs = prepare("INSERT INTO postings (seq, account_id, amount, balance_after) VALUES (?, 2, -1, ?), (?, ?, 1, ?)");
        sqlite3_stmt *bonusKey = prepare("INSERT INTO idempotency_keys (scope, key, request_hash, seq) VALUES (?, ?, ?, ?)");
        sqlite3_stmt *bonusLot = prepare(
            "INSERT INTO lots (account_id, category, amount, remaining, created_at, expires_at, source_seq)"
            " VALUES (?, 'bonus', 1, 1, '2026-11-22T00:00:00.000Z', '2027-09-18T00:00:00.000Z', ?)");
        long long given = (long long)players * lotsPerWallet;
        for (long long index = 0; index < given; index++) {
            if (index % 10000 == 0) CHECK(sqlite3_exec(db, index ? "COMMIT; BEGIN" : "BEGIN", 0, 0, 0));
            int player = index % players;
            long long accountID = player + 3;
            char playerID[32], scope[48], idempotencyKey[32], id[40];
            snprintf(playerID, sizeof playerID, "player-%d", player);
            snprintf(scope, sizeof scope, "bonus:%s", playerID);
            snprintf(idempotencyKey, sizeof idempotencyKey, "lot-%lld", index);
            snprintf(id, sizeof id, "%08x-%04x-4%03x-8%03x-%012x", rand(), rand() & 0xffff, rand() & 0xfff, rand() & 0xfff, rand());
            seq++;
            sqlite3_bind_int64(bonus, 1, seq);
            sqlite3_bind_text(bonus, 2, id, 36, SQLITE_STATIC);
            sqlite3_bind_text(bonus, 3, playerID, -1, SQLITE_STATIC);
            sqlite3_bind_text(bonus, 4, idempotencyKey, -1, SQLITE_STATIC);
            sqlite3_bind_text(bonus, 5, hash, 64, SQLITE_STATIC);
            sqlite3_bind_text(bonus, 6, hash, 64, SQLITE_STATIC);
            run(bonus);
            sqlite3_bind_int64(legs, 1, seq);
            sqlite3_bind_int64(legs, 2, -(index + 1));
            sqlite3_bind_int64(legs, 3, seq);
            sqlite3_bind_int64(legs, 4, accountID);
            sqlite3_bind_int64(legs, 5, 1000000000LL + index / players + 1);
            run(legs);
            sqlite3_bind_text(bonusKey, 1, scope, -1, SQLITE_STATIC);
            sqlite3_bind_text(bonusKey, 2, idempotencyKey, -1, SQLITE_STATIC);
            sqlite3_bind_text(bonusKey, 3, hash, 64, SQLITE_STATIC);
            sqlite3_bind_int64(bonusKey, 4, seq);
            run(bonusKey);
            sqlite3_bind_int64(bonusLot, 1, accountID);
            sqlite3_bind_int64(bonusLot, 2, seq);
            run(bonusLot);
        }
        char sql[120];
        snprintf(sql, sizeof sql, "UPDATE accounts SET balance = %lld WHERE id = 2", -given);
        CHECK(sqlite3_exec(db, sql, 0, 0, 0));
        if (given) CHECK(sqlite3_exec(db, "COMMIT", 0, 0, 0));
        sqlite3_finalize(bonus);
        sqlite3_finalize(legs);
        sqlite3_finalize(bonusKey);
        sqlite3_finalize(bonusLot);
    }

    sqlite3_stmt *begin = prepare("BEGIN IMMEDIATE"), *commit = prepare("COMMIT");
    sqlite3_stmt *savepoint = prepare("SAVEPOINT operation"), *release = prepare("RELEASE SAVEPOINT operation");
    sqlite3_stmt *replay = prepare("SELECT request_hash, seq FROM idempotency_keys WHERE scope = ? AND key = ?");
    sqlite3_stmt *account = prepare("SELECT id, balance FROM accounts WHERE owner = ? AND currency = 'credits'");
    sqlite3_stmt *transaction = prepare(
        "INSERT INTO transactions (seq, id, kind, player_id, currency, amount, actor, created_at, idempotency_key, uncollected, prev_hash, hash)"
        " VALUES (?, ?, 'spend', ?, 'credits', ?, 'bench', ?, ?, 0, ?, ?)");
    sqlite3_stmt *posting = beforeLots ? prepare("INSERT INTO postings (seq, account_id, amount, balance_after) VALUES (?, ?, ?, ?)")
                                       : prepare("INSERT INTO postings (seq, account_id, amount, balance_after) VALUES (?, ?, ?, ?), (?, ?, ?, ?)");
    sqlite3_stmt *balance = prepare("UPDATE accounts SET balance = ? WHERE id = ?");
    sqlite3_stmt *key = prepare("INSERT INTO idempotency_keys (scope, key, request_hash, seq) VALUES (?, ?, ?, ?)");
    sqlite3_stmt *lots = NULL, *holds = NULL, *drawLot = NULL, *breakdown = NULL;
    if (!beforeLots) {
        lots = prepare("SELECT id, category, amount, remaining, created_at, expires_at, source_seq FROM lots"
                       " WHERE account_id = ? AND remaining > 0 ORDER BY " BURN_ORDER " LIMIT ?");
        holds = prepare("SELECT h.id, h.player_id, h.currency, h.amount, h.status, h.expires_at, h.hold_seq, h.resolved_seq, h.captured, t.actor"
                        " FROM holds h JOIN transactions t ON t.seq = h.hold_seq"
                        " WHERE h.player_id = ? AND h.currency = ? AND h.status = 'open' AND h.expires_at <= ? ORDER BY h.expires_at, h.id");
        drawLot = prepare("UPDATE lots SET remaining = remaining - ? WHERE id = ?");
        breakdown = prepare("INSERT INTO lot_draws (seq, lot_id, amount) VALUES (?, ?, ?)");
    }
    // SQLite's autocheckpoint checkpointed while seeding; from here the hook replaces it.
    sqlite3_wal_hook(db, walHook, NULL);
    pthread_t passer;
    if (checkpointsAsWallet && pthread_create(&passer, NULL, passThread, (void *)path) != 0) { perror("pthread_create"); return 1; }

    // Balances changed in the batch (the lots statement set writes each once, at the commit).
    // Accounts: '@spend' is 1, '@bonuses' 2 with --bonus-lots, then the players in order.
    int firstPlayer = bonusLots ? 3 : 2;
    long long *balances = calloc(players + firstPlayer, sizeof *balances);
    char *dirty = calloc(players + firstPlayer, 1);
    long long changedIDs[512], changedValues[512];
    int changed = 0;
    long long sinkBalance = 0;
    srand(1);
    long long pagesBefore = pragma(db, "PRAGMA page_count");
    double started = seconds(), committing = 0;
    long batches = 0;
    for (int done = 0; done < operations;) {
        double begun = seconds();
        run(begin);
        committing += seconds() - begun;
        for (int inBatch = 0; inBatch < batch && done < operations; inBatch++, done++) {
            if (savepoints) run(savepoint);
            int player = rand() % players;
            char playerID[32], owner[48], scope[48], idempotencyKey[48], id[40];
            snprintf(playerID, sizeof playerID, "player-%d", player);
            snprintf(owner, sizeof owner, "player:%s", playerID);
            snprintf(scope, sizeof scope, "spend:%s", playerID);
            if (sequentialKeys) snprintf(idempotencyKey, sizeof idempotencyKey, "key-%012d", done);
            else snprintf(idempotencyKey, sizeof idempotencyKey, "%08x-%08x", rand(), rand());
            snprintf(id, sizeof id, "%08x-%04x-4%03x-8%03x-%012x", rand(), rand() & 0xffff, rand() & 0xfff, rand() & 0xfff, rand());

            sqlite3_bind_text(replay, 1, scope, -1, SQLITE_STATIC);
            sqlite3_bind_text(replay, 2, idempotencyKey, -1, SQLITE_STATIC);
            run(replay);
            long long accountID, playerBalance;
            if (!beforeLots && dirty[player + firstPlayer]) {
                // Known in this batch already, as `BatchContext` keeps the accounts it read.
                accountID = player + firstPlayer;
                playerBalance = balances[player + firstPlayer] - 3;
            } else {
                sqlite3_bind_text(account, 1, owner, -1, SQLITE_STATIC);
                CHECK(sqlite3_step(account));
                accountID = sqlite3_column_int64(account, 0);
                playerBalance = sqlite3_column_int64(account, 1) - 3;
                sqlite3_reset(account);
            }
            // The lots the spend draws, in burn order, and what it takes from each: the first lot
            // covers 3 credits (one row read), or with --bonus-lots three one-credit lots do (four
            // rows read, as the wallet reads them before `LotRules.decides`).
            long long drawn[4][2];
            int draws = 0;
            if (!beforeLots) {
                sqlite3_bind_int64(lots, 1, accountID);
                sqlite3_bind_int64(lots, 2, bonusLots ? 4 : 1);
                long long needed = 3;
                while (sqlite3_step(lots) == SQLITE_ROW) {
                    if (needed == 0) continue;
                    long long remaining = sqlite3_column_int64(lots, 3), taken = remaining < needed ? remaining : needed;
                    drawn[draws][0] = sqlite3_column_int64(lots, 0);
                    drawn[draws][1] = taken;
                    draws++;
                    needed -= taken;
                }
                sqlite3_reset(lots);
                if (needed > 0) { fprintf(stderr, "the lots of %s do not cover a spend\n", playerID); return 1; }
                sqlite3_bind_text(holds, 1, playerID, -1, SQLITE_STATIC);
                sqlite3_bind_text(holds, 2, "credits", -1, SQLITE_STATIC);
                sqlite3_bind_text(holds, 3, "2026-11-22T01:00:00.000Z", 24, SQLITE_STATIC);
                run(holds);
            }

            seq++;
            sinkBalance += 3;
            sqlite3_bind_int64(transaction, 1, seq);
            sqlite3_bind_text(transaction, 2, id, 36, SQLITE_STATIC);
            sqlite3_bind_text(transaction, 3, playerID, -1, SQLITE_STATIC);
            sqlite3_bind_int64(transaction, 4, -3);
            sqlite3_bind_text(transaction, 5, "2026-11-22T01:00:00.000Z", 24, SQLITE_STATIC);
            sqlite3_bind_text(transaction, 6, idempotencyKey, -1, SQLITE_STATIC);
            sqlite3_bind_text(transaction, 7, hash, 64, SQLITE_STATIC);
            sqlite3_bind_text(transaction, 8, hash, 64, SQLITE_STATIC);
            run(transaction);
            long long legs[2][3] = {{accountID, -3, playerBalance}, {1, 3, sinkBalance}};
            if (beforeLots) {
                for (int leg = 0; leg < 2; leg++) {
                    sqlite3_bind_int64(posting, 1, seq);
                    sqlite3_bind_int64(posting, 2, legs[leg][0]);
                    sqlite3_bind_int64(posting, 3, legs[leg][1]);
                    sqlite3_bind_int64(posting, 4, legs[leg][2]);
                    run(posting);
                    sqlite3_bind_int64(balance, 1, legs[leg][2]);
                    sqlite3_bind_int64(balance, 2, legs[leg][0]);
                    run(balance);
                }
            } else {
                for (int leg = 0; leg < 2; leg++) {
                    sqlite3_bind_int64(posting, 4 * leg + 1, seq);
                    sqlite3_bind_int64(posting, 4 * leg + 2, legs[leg][0]);
                    sqlite3_bind_int64(posting, 4 * leg + 3, legs[leg][1]);
                    sqlite3_bind_int64(posting, 4 * leg + 4, legs[leg][2]);
                    balances[legs[leg][0]] = legs[leg][2];
                    dirty[legs[leg][0]] = 1;
                }
                run(posting);
            }
            sqlite3_bind_text(key, 1, scope, -1, SQLITE_STATIC);
            sqlite3_bind_text(key, 2, idempotencyKey, -1, SQLITE_STATIC);
            sqlite3_bind_text(key, 3, hash, 64, SQLITE_STATIC);
            sqlite3_bind_int64(key, 4, seq);
            run(key);
            for (int draw = 0; draw < draws; draw++) {
                sqlite3_bind_int64(drawLot, 1, drawn[draw][1]);
                sqlite3_bind_int64(drawLot, 2, drawn[draw][0]);
                run(drawLot);
                sqlite3_bind_int64(breakdown, 1, seq);
                sqlite3_bind_int64(breakdown, 2, drawn[draw][0]);
                sqlite3_bind_int64(breakdown, 3, drawn[draw][1]);
                run(breakdown);
            }
            if (savepoints) run(release);
        }
        for (long long accountID = 1; !beforeLots && accountID < players + firstPlayer; accountID++) {
            if (!dirty[accountID]) continue;
            changedIDs[changed] = accountID;
            changedValues[changed++] = balances[accountID];
            dirty[accountID] = 0;
            if (changed == 512) { writeBalances(changedIDs, changedValues, changed); changed = 0; }
        }
        writeBalances(changedIDs, changedValues, changed);
        changed = 0;
        double commitStarted = seconds();
        run(commit);
        committing += seconds() - commitStarted;
        batches++;
    }
    double elapsed = seconds() - started;
    if (checkpointsAsWallet) {
        pthread_mutex_lock(&passLock);
        passesStopping = 1;
        pthread_cond_signal(&passSignal);
        pthread_mutex_unlock(&passLock);
        pthread_join(passer, NULL);
    }
    // What the database grew by (every table and index), per operation.
    double bytesPerOperation = (double)(pragma(db, "PRAGMA page_count") - pagesBefore) * pragma(db, "PRAGMA page_size") / operations;
    char checkpoints[80] = "checkpoints none";
    if (checkpointsAsWallet) snprintf(checkpoints, sizeof checkpoints, "checkpoints %ld passes and %ld on the writer", passes, writerCheckpoints);
    // Where the time went, as `wallet bench` prints it for its writer ("writer's time"): the
    // statements between BEGIN and COMMIT, per operation, and BEGIN and COMMIT, per batch.
    printf("%s, %d %slots a wallet: %d per commit, %d players, %s keys, savepoints %s, %s: %.0f ops/s, %.2f pages written and %.0f bytes grown per operation;"
           " %.2f µs an operation running it, a batch %.2f ms committing\n",
           beforeLots ? "before lots" : "lots", beforeLots ? 0 : lotsPerWallet, bonusLots ? "one-credit bonus " : "", batch, players, argv[6], savepoints ? "on" : "off",
           checkpoints, operations / elapsed, (double)frames / operations, bytesPerOperation,
           (elapsed - committing) / operations * 1e6, committing / batches * 1e3);
    sqlite3_close(db);
    return 0;
}
