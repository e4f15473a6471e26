// What SQLite itself can do for the wallet's spend, without Swift or GRDB: the same statements
// a spend runs (idempotency lookup, account lookup, transaction row, two postings, two balance
// updates, idempotency key), prepared once, `synchronous=FULL`, WAL, N operations per commit.
// It gives the ceiling that `wallet bench` is measured against in README "Performance".
//
// Build and run through Tests/Load/sqlite-ceiling.sh. Usage:
//   sqlite-ceiling DB SCHEMA.sql BATCH OPERATIONS PLAYERS KEYS SAVEPOINTS
//   PLAYERS: distinct wallets spent from; KEYS: "random" or "sequential" idempotency keys;
//   SAVEPOINTS: 1 to wrap each operation in a savepoint as the group commit does, 0 not to.
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

// Counts the WAL frames (pages) each commit wrote.
static int walHook(void *unused, sqlite3 *connection, const char *name, int pages) {
    frames += pages > lastFrames ? pages - lastFrames : pages;
    lastFrames = pages;
    commits++;
    return SQLITE_OK;
}

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: %s DB SCHEMA.sql BATCH OPERATIONS PLAYERS random|sequential SAVEPOINTS(0|1)\n", argv[0]);
        return 64;
    }
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
    CHECK(sqlite3_exec(db, "BEGIN; INSERT INTO accounts (owner, currency, balance) VALUES ('@spend', 'credits', 0)", 0, 0, 0));
    for (int player = 0; player < players; player++) {
        char sql[200];
        snprintf(sql, sizeof sql, "INSERT INTO accounts (owner, currency, balance) VALUES ('player:player-%d', 'credits', 1000000000)", player);
        CHECK(sqlite3_exec(db, sql, 0, 0, 0));
    }
    CHECK(sqlite3_exec(db, "COMMIT", 0, 0, 0));

    sqlite3_stmt *begin = prepare("BEGIN IMMEDIATE"), *commit = prepare("COMMIT");
    sqlite3_stmt *savepoint = prepare("SAVEPOINT operation"), *release = prepare("RELEASE SAVEPOINT operation");
    sqlite3_stmt *replay = prepare("SELECT request_hash, seq FROM idempotency_keys WHERE scope = ? AND key = ?");
    sqlite3_stmt *account = prepare("SELECT id, balance FROM accounts WHERE owner = ? AND currency = 'credits'");
    sqlite3_stmt *transaction = prepare(
        "INSERT INTO transactions (seq, id, kind, player_id, currency, amount, actor, created_at, idempotency_key, uncollected, prev_hash, hash)"
        " VALUES (?, ?, 'spend', ?, 'credits', ?, 'bench', ?, ?, 0, ?, ?)");
    sqlite3_stmt *posting = prepare("INSERT INTO postings (seq, account_id, amount, balance_after) VALUES (?, ?, ?, ?)");
    sqlite3_stmt *balance = prepare("UPDATE accounts SET balance = ? WHERE id = ?");
    sqlite3_stmt *key = prepare("INSERT INTO idempotency_keys (scope, key, request_hash, seq) VALUES (?, ?, ?, ?)");
    sqlite3_wal_hook(db, walHook, NULL);

    const char *hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    long long seq = 0, sinkBalance = 0;
    srand(1);
    double started = seconds();
    for (int done = 0; done < operations;) {
        run(begin);
        for (int inBatch = 0; inBatch < batch && done < operations; inBatch++, done++) {
            if (savepoints) run(savepoint);
            int player = rand() % players;
            char playerID[32], owner[48], scope[48], idempotencyKey[48], id[40];
            snprintf(playerID, sizeof playerID, "player-%d", player);
            snprintf(owner, sizeof owner, "player:%s", playerID);
            snprintf(scope, sizeof scope, "wallet:%s", playerID);
            if (sequentialKeys) snprintf(idempotencyKey, sizeof idempotencyKey, "key-%012d", done);
            else snprintf(idempotencyKey, sizeof idempotencyKey, "%08x-%08x", rand(), rand());
            snprintf(id, sizeof id, "%08x-%04x-4%03x-8%03x-%012x", rand(), rand() & 0xffff, rand() & 0xfff, rand() & 0xfff, rand());

            sqlite3_bind_text(replay, 1, scope, -1, SQLITE_STATIC);
            sqlite3_bind_text(replay, 2, idempotencyKey, -1, SQLITE_STATIC);
            run(replay);
            sqlite3_bind_text(account, 1, owner, -1, SQLITE_STATIC);
            CHECK(sqlite3_step(account));
            long long accountID = sqlite3_column_int64(account, 0), playerBalance = sqlite3_column_int64(account, 1) - 3;
            sqlite3_reset(account);

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
            sqlite3_bind_text(key, 1, scope, -1, SQLITE_STATIC);
            sqlite3_bind_text(key, 2, idempotencyKey, -1, SQLITE_STATIC);
            sqlite3_bind_text(key, 3, hash, 64, SQLITE_STATIC);
            sqlite3_bind_int64(key, 4, seq);
            run(key);
            if (savepoints) run(release);
        }
        run(commit);
    }
    double elapsed = seconds() - started;
    printf("%d per commit, %d players, %s keys, savepoints %s: %.0f ops/s, %.2f pages written per operation\n",
           batch, players, argv[6], savepoints ? "on" : "off", operations / elapsed, (double)frames / operations);
    sqlite3_close(db);
    return 0;
}
