import WalletCore
import WalletSQL

/// The ledger's schema on PostgreSQL: the tables, columns, constraints and indexes of
/// `schema.sql` (SQLite's, the reference) in PostgreSQL's words, with its own version number in
/// `wallet_schema`. Every text column sorts and compares by bytes (`COLLATE "C"`), as SQLite's
/// do, so both stores order accounts, postings and exports alike, and so hash alike.
enum PostgresSchema {
    /// The version in `wallet_schema` this build writes and understands.
    static let version = 9

    /// Versions as `SchemaMigrator` runs them: `statements` create the latest schema in an empty
    /// database; each later version adds a migration here, made of statements `statements` holds.
    static let migrator = SchemaMigrator(
        latest: version, create: statements,
        migrations: [
            // Version 1 kept no outbox of replies to the stores.
            SchemaMigrator.Migration(version: 2, statements: consumptionReplies),
            // Version 2 allowed five kinds of transaction and kept no lots or holds.
            SchemaMigrator.Migration(
                version: 3,
                statements: [
                    "ALTER TABLE transactions DROP CONSTRAINT transactions_kind_check",
                    "ALTER TABLE transactions ADD CONSTRAINT transactions_kind_check CHECK (\(kindCheck))",
                    // Version 2's reason-code check had no name of its own: found by what it says.
                    """
                    DO $$ DECLARE found TEXT; BEGIN
                        SELECT conname INTO found FROM pg_constraint
                        WHERE conrelid = 'transactions'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%reason_code IS NULL%';
                        IF found IS NOT NULL THEN EXECUTE format('ALTER TABLE transactions DROP CONSTRAINT %I', found); END IF;
                    END $$
                    """,
                    "ALTER TABLE transactions ADD CONSTRAINT transactions_reason_code_check CHECK (\(reasonCodeCheck))",
                ] + lotsAndHolds + [openingLots]),
            // Version 3 listed the kinds in a CHECK; version 4 lists them in `transaction_kinds`,
            // filled from Core before `transactions` references it (the reference checks every row).
            SchemaMigrator.Migration(
                version: 4,
                statements: [
                    transactionKinds,
                    SchemaMigrator.transactionKindRows,
                    "ALTER TABLE transactions DROP CONSTRAINT transactions_kind_check",
                    "ALTER TABLE transactions ADD CONSTRAINT \(kindReference) FOREIGN KEY (kind) REFERENCES transaction_kinds (kind)",
                ]),
            // Version 4 kept no store purchase records and no outbox of purchases to finish.
            SchemaMigrator.Migration(version: 5, statements: storePurchases),
            // Version 5 sold consumables only, kept no entitlements, no store voids, no leases on
            // work one instance at a time does, and only consumed what it finished.
            SchemaMigrator.Migration(version: 6, statements: productTypes + finishActions + entitlements + storeVoidsAndLeases),
            // Version 6 kept no webhook endpoints.
            SchemaMigrator.Migration(version: 7, statements: webhookEndpoints),
            // Version 7 kept open lots by id, so a debit read every lot of its wallet. An upgrade
            // from version 2 made `lots_burn` already (version 3 takes `lotsAndHolds` as they are now).
            SchemaMigrator.Migration(version: 8, statements: ["DROP INDEX IF EXISTS lots_open", "DROP INDEX IF EXISTS lots_burn", lotsBurn]),
            // Version 8 found a player's store notifications by reading every one.
            SchemaMigrator.Migration(version: 9, statements: ["DROP INDEX IF EXISTS store_notifications_purchase", notificationsByPurchase]),
        ],
        everyOpen: [SchemaMigrator.transactionKindRows],
        name: "the PostgreSQL database")

    /// Brings the database to `version` in the caller's transaction (see `SchemaMigrator`).
    /// Concurrent first uses wait for each other on a transaction-scoped advisory lock.
    static func apply(_ db: any SQLSession, migrator: SchemaMigrator = migrator) throws {
        try db.execute("SELECT pg_advisory_xact_lock(7353012760293451)")
        let versioned = try db.integer(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'wallet_schema'") ?? 0
        let found = try versioned > 0 ? db.integer("SELECT max(version) FROM wallet_schema") ?? 0 : 0
        try migrator.migrate(
            version: Int(found),
            isEmpty: { try db.integer("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()") == 0 },
            run: { statement in try db.execute(statement) },
            record: { version in try db.execute("INSERT INTO wallet_schema (version, applied_at) VALUES (?, now())", [.integer(Int64(version))]) })
    }

    static let statements: [String] = [
        // One row per version reached, as GRDB's `grdb_migrations` keeps one per migration.
        "CREATE TABLE wallet_schema (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)",
        // The one row every writer locks first: the ledger's global order (see PostgresEngine).
        "CREATE TABLE ledger_lock (id BIGINT PRIMARY KEY CHECK (id = 1))",
        "INSERT INTO ledger_lock (id) VALUES (1)",
        """
        CREATE TABLE currencies (
            code TEXT COLLATE "C" PRIMARY KEY CHECK (length(code) BETWEEN 1 AND 16 AND code ~ '^[a-z][a-z0-9_]*$')
        )
        """,
        "INSERT INTO currencies (code) VALUES ('credits')",
        // Its rows come from Core at every open (`SchemaMigrator.transactionKindRows`).
        transactionKinds,
        """
        CREATE TABLE accounts (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            owner TEXT COLLATE "C" NOT NULL CHECK (length(owner) BETWEEN 2 AND 300),
            currency TEXT COLLATE "C" NOT NULL REFERENCES currencies (code),
            balance BIGINT NOT NULL DEFAULT 0,
            UNIQUE (owner, currency)
        )
        """,
        """
        CREATE TABLE products (
            product_id TEXT COLLATE "C" PRIMARY KEY CHECK (length(product_id) BETWEEN 1 AND 255),
            currency TEXT COLLATE "C" NOT NULL REFERENCES currencies (code),
            credits BIGINT NOT NULL CHECK (credits BETWEEN 1 AND 1000000000),
            store TEXT COLLATE "C" CHECK (store IS NULL OR length(store) BETWEEN 1 AND 32),
            active BIGINT NOT NULL CHECK (active IN (0, 1)),
            updated_at TEXT COLLATE "C" NOT NULL
        )
        """,
    ] + productTypes + [
        """
        CREATE TABLE transactions (
            seq BIGINT PRIMARY KEY CHECK (seq >= 1),
            id TEXT COLLATE "C" NOT NULL CHECK (length(id) = 36),
            kind TEXT COLLATE "C" NOT NULL CONSTRAINT \(kindReference) REFERENCES transaction_kinds (kind),
            player_id TEXT COLLATE "C" NOT NULL CHECK (length(player_id) BETWEEN 1 AND 255),
            currency TEXT COLLATE "C" NOT NULL REFERENCES currencies (code),
            amount BIGINT NOT NULL,
            actor TEXT COLLATE "C" NOT NULL CHECK (length(actor) BETWEEN 1 AND 255),
            created_at TEXT COLLATE "C" NOT NULL CHECK (length(created_at) = 24),
            idempotency_key TEXT COLLATE "C" CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 255),
            store TEXT COLLATE "C",
            store_transaction_id TEXT COLLATE "C",
            product_id TEXT COLLATE "C",
            quantity BIGINT CHECK (quantity IS NULL OR quantity >= 1),
            reason_code TEXT COLLATE "C",
            note TEXT COLLATE "C",
            ticket TEXT COLLATE "C",
            refund_of_seq BIGINT REFERENCES transactions (seq),
            uncollected BIGINT NOT NULL DEFAULT 0 CHECK (uncollected >= 0),
            metadata TEXT COLLATE "C",
            prev_hash TEXT COLLATE "C" NOT NULL CHECK (length(prev_hash) = 64),
            hash TEXT COLLATE "C" NOT NULL CHECK (length(hash) = 64),
            CHECK ((kind = 'purchase') = (store IS NOT NULL AND store_transaction_id IS NOT NULL AND product_id IS NOT NULL AND quantity IS NOT NULL)),
            CHECK ((kind IN ('refund', 'refund_reversal')) = (refund_of_seq IS NOT NULL)),
            CONSTRAINT transactions_reason_code_check CHECK (\(reasonCodeCheck)),
            CHECK (kind <> 'adjustment' OR (reason_code IS NOT NULL AND note IS NOT NULL))
        )
        """,
        "CREATE UNIQUE INDEX transactions_purchase_store_transaction ON transactions (store, store_transaction_id) WHERE kind = 'purchase'",
        "CREATE INDEX transactions_corrections ON transactions (refund_of_seq, seq) WHERE refund_of_seq IS NOT NULL",
        "CREATE INDEX transactions_player ON transactions (player_id, seq)",
        "CREATE INDEX transactions_created_at ON transactions (created_at)",
        """
        CREATE TABLE postings (
            seq BIGINT NOT NULL REFERENCES transactions (seq),
            account_id BIGINT NOT NULL REFERENCES accounts (id),
            amount BIGINT NOT NULL,
            balance_after BIGINT NOT NULL,
            PRIMARY KEY (seq, account_id)
        )
        """,
        """
        CREATE TABLE idempotency_keys (
            scope TEXT COLLATE "C" NOT NULL CHECK (length(scope) BETWEEN 1 AND 300),
            key TEXT COLLATE "C" NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
            request_hash TEXT COLLATE "C" NOT NULL CHECK (length(request_hash) = 64),
            seq BIGINT NOT NULL REFERENCES transactions (seq),
            PRIMARY KEY (scope, key)
        )
        """,
        """
        CREATE TABLE api_keys (
            id TEXT COLLATE "C" PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
            name TEXT COLLATE "C" NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
            role TEXT COLLATE "C" NOT NULL CHECK (role IN ('admin', 'service', 'support', 'auditor')),
            key_hash TEXT COLLATE "C" NOT NULL UNIQUE CHECK (length(key_hash) = 64),
            created_at TEXT COLLATE "C" NOT NULL,
            revoked_at TEXT COLLATE "C"
        )
        """,
        """
        CREATE TABLE store_notifications (
            notification_uuid TEXT COLLATE "C" PRIMARY KEY CHECK (length(notification_uuid) BETWEEN 1 AND 64),
            store TEXT COLLATE "C" NOT NULL,
            notification_type TEXT COLLATE "C" NOT NULL CHECK (length(notification_type) BETWEEN 1 AND 64),
            subtype TEXT COLLATE "C",
            store_transaction_id TEXT COLLATE "C",
            outcome TEXT COLLATE "C" NOT NULL,
            ledger_seq BIGINT REFERENCES transactions (seq),
            spent_share_thousandths BIGINT CHECK (spent_share_thousandths IS NULL OR spent_share_thousandths BETWEEN 0 AND 100000),
            received_at TEXT COLLATE "C" NOT NULL
        )
        """,
        notificationsByPurchase,
        """
        CREATE TABLE store_transaction_states (
            store TEXT COLLATE "C" NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
            store_transaction_id TEXT COLLATE "C" NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
            state TEXT COLLATE "C" NOT NULL CHECK (state IN ('refunded', 'refund_reversed')),
            share_thousandths BIGINT NOT NULL CHECK (share_thousandths BETWEEN 0 AND 100000),
            reported_at BIGINT NOT NULL,
            PRIMARY KEY (store, store_transaction_id)
        )
        """,
        """
        CREATE TABLE store_account_tokens (
            store TEXT COLLATE "C" NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
            token TEXT COLLATE "C" NOT NULL CHECK (length(token) = 36 AND token ~ '^[0-9a-f-]*$'),
            player_id TEXT COLLATE "C" NOT NULL CHECK (length(player_id) BETWEEN 1 AND 255),
            seq BIGINT NOT NULL REFERENCES transactions (seq),
            PRIMARY KEY (store, token)
        )
        """,
    ] + consumptionReplies + lotsAndHolds + storePurchases + finishActions + entitlements + storeVoidsAndLeases + webhookEndpoints + [
        // The ledger is append-only: edits, deletions and out-of-order rows are refused.
        """
        CREATE FUNCTION wallet_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
        END
        $$
        """,
        """
        CREATE FUNCTION wallet_gap_free() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.seq <> (SELECT coalesce(max(seq), 0) + 1 FROM transactions) THEN
                RAISE EXCEPTION 'transaction seq must follow the last one without a gap';
            END IF;
            RETURN NEW;
        END
        $$
        """,
        "CREATE TRIGGER transactions_append_only BEFORE UPDATE OR DELETE ON transactions FOR EACH ROW EXECUTE FUNCTION wallet_refuse()",
        "CREATE TRIGGER transactions_gap_free BEFORE INSERT ON transactions FOR EACH ROW EXECUTE FUNCTION wallet_gap_free()",
        "CREATE TRIGGER postings_append_only BEFORE UPDATE OR DELETE ON postings FOR EACH ROW EXECUTE FUNCTION wallet_refuse()",
        "CREATE TRIGGER idempotency_keys_append_only BEFORE UPDATE OR DELETE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION wallet_refuse()",
        // TRUNCATE skips row triggers: refused on its own. And the lock row stays, or writers
        // would stop taking turns (they refuse to write without it).
        "CREATE TRIGGER transactions_no_truncate BEFORE TRUNCATE ON transactions FOR EACH STATEMENT EXECUTE FUNCTION wallet_refuse()",
        "CREATE TRIGGER postings_no_truncate BEFORE TRUNCATE ON postings FOR EACH STATEMENT EXECUTE FUNCTION wallet_refuse()",
        "CREATE TRIGGER idempotency_keys_no_truncate BEFORE TRUNCATE ON idempotency_keys FOR EACH STATEMENT EXECUTE FUNCTION wallet_refuse()",
        "CREATE TRIGGER ledger_lock_fixed BEFORE UPDATE OR DELETE ON ledger_lock FOR EACH ROW EXECUTE FUNCTION wallet_refuse()",
        "CREATE TRIGGER ledger_lock_no_truncate BEFORE TRUNCATE ON ledger_lock FOR EACH STATEMENT EXECUTE FUNCTION wallet_refuse()",
    ]
    /// The outbox of replies to the stores (schema.sql's `consumption_replies`).
    static let consumptionReplies = [
        """
        CREATE TABLE consumption_replies (
            notification_uuid TEXT COLLATE "C" PRIMARY KEY REFERENCES store_notifications (notification_uuid),
            store TEXT COLLATE "C" NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
            store_transaction_id TEXT COLLATE "C" NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
            environment TEXT COLLATE "C" NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
            delivered BIGINT NOT NULL CHECK (delivered IN (0, 1)),
            spent_share_millipercent BIGINT CHECK (spent_share_millipercent IS NULL OR spent_share_millipercent BETWEEN 0 AND 100000),
            sample_content_provided BIGINT NOT NULL CHECK (sample_content_provided IN (0, 1)),
            refund_preference TEXT COLLATE "C" CHECK (refund_preference IS NULL OR refund_preference IN ('DECLINE', 'GRANT_FULL', 'GRANT_PRORATED')),
            created_at TEXT COLLATE "C" NOT NULL,
            deadline TEXT COLLATE "C" NOT NULL,
            status TEXT COLLATE "C" NOT NULL CHECK (status IN ('pending', 'sent', 'expired', 'failed')),
            attempts BIGINT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            next_attempt_at TEXT COLLATE "C" NOT NULL,
            last_error TEXT COLLATE "C",
            finished_at TEXT COLLATE "C"
        )
        """,
        "CREATE INDEX consumption_replies_due ON consumption_replies (next_attempt_at) WHERE status = 'pending'",
    ]

    /// What stores reported about purchases, and the outbox of purchases to finish on the stores'
    /// side (schema.sql's `store_purchases` and `purchase_finishes`).
    static let storePurchases = [
        """
        CREATE TABLE store_purchases (
            store TEXT COLLATE "C" NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
            store_transaction_id TEXT COLLATE "C" NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
            order_id TEXT COLLATE "C" CHECK (order_id IS NULL OR length(order_id) BETWEEN 1 AND 255),
            purchase_type TEXT COLLATE "C" NOT NULL CHECK (purchase_type IN ('paid', 'test', 'promo', 'rewarded')),
            region TEXT COLLATE "C" CHECK (region IS NULL OR length(region) BETWEEN 2 AND 8),
            seq BIGINT NOT NULL REFERENCES transactions (seq),
            PRIMARY KEY (store, store_transaction_id)
        )
        """,
        "CREATE INDEX store_purchases_order ON store_purchases (store, order_id) WHERE order_id IS NOT NULL",
        // One record per purchase transaction, and `wallet copy` pages by it.
        "CREATE UNIQUE INDEX store_purchases_seq ON store_purchases (seq)",
        """
        CREATE TABLE purchase_finishes (
            store TEXT COLLATE "C" NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
            store_transaction_id TEXT COLLATE "C" NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
            product_id TEXT COLLATE "C" NOT NULL CHECK (length(product_id) BETWEEN 1 AND 255),
            status TEXT COLLATE "C" NOT NULL CHECK (status IN ('pending', 'done', 'failed')),
            attempts BIGINT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            created_at TEXT COLLATE "C" NOT NULL,
            next_attempt_at TEXT COLLATE "C" NOT NULL,
            last_error TEXT COLLATE "C",
            finished_at TEXT COLLATE "C",
            PRIMARY KEY (store, store_transaction_id),
            FOREIGN KEY (store, store_transaction_id) REFERENCES store_purchases (store, store_transaction_id)
        )
        """,
        "CREATE INDEX purchase_finishes_due ON purchase_finishes (next_attempt_at) WHERE status = 'pending'",
    ]

    /// What a product is and the entitlement it grants (schema.sql's `products`): version 5's
    /// table widened in place, its rows consumables.
    static let productTypes = [
        "ALTER TABLE products DROP CONSTRAINT products_credits_check",
        "ALTER TABLE products ADD CONSTRAINT products_credits_check CHECK (credits BETWEEN 0 AND 1000000000)",
        """
        ALTER TABLE products
            ADD COLUMN type TEXT COLLATE "C" NOT NULL DEFAULT 'consumable' CHECK (type IN ('consumable', 'non_consumable', 'non_renewing')),
            ADD COLUMN entitlement TEXT COLLATE "C" CHECK (entitlement IS NULL OR length(entitlement) BETWEEN 1 AND 64),
            ADD COLUMN duration TEXT COLLATE "C" CHECK (duration IS NULL OR length(duration) BETWEEN 3 AND 32),
            ADD CHECK ((type = 'consumable') = (entitlement IS NULL)),
            ADD CHECK ((type = 'non_renewing') = (duration IS NOT NULL)),
            ADD CHECK (type <> 'consumable' OR credits >= 1)
        """,
    ]

    /// How each purchase is finished (schema.sql's `purchase_finishes.action`): version 5's outbox
    /// widened in place, its rows consumptions (it sold consumables only). The default serves
    /// those rows alone: every write names its action.
    static let finishActions = [
        """
        ALTER TABLE purchase_finishes
            ADD COLUMN action TEXT COLLATE "C" NOT NULL DEFAULT 'consume' CHECK (action IN ('consume', 'acknowledge'))
        """,
        "ALTER TABLE purchase_finishes ALTER COLUMN action DROP DEFAULT",
    ]

    /// Entitlements and their items (schema.sql's `entitlements`, `entitlement_items`).
    static let entitlements = [
        """
        CREATE TABLE entitlements (
            player_id TEXT COLLATE "C" NOT NULL CHECK (length(player_id) BETWEEN 1 AND 255),
            name TEXT COLLATE "C" NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
            forever BIGINT NOT NULL CHECK (forever IN (0, 1)),
            expires_at TEXT COLLATE "C" CHECK (expires_at IS NULL OR length(expires_at) = 24),
            updated_seq BIGINT NOT NULL REFERENCES transactions (seq),
            PRIMARY KEY (player_id, name)
        )
        """,
        """
        CREATE TABLE entitlement_items (
            seq BIGINT PRIMARY KEY REFERENCES transactions (seq),
            player_id TEXT COLLATE "C" NOT NULL,
            name TEXT COLLATE "C" NOT NULL,
            kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('period', 'forever', 'revoke')),
            starts_at TEXT COLLATE "C" NOT NULL CHECK (length(starts_at) = 24),
            period TEXT COLLATE "C" CHECK ((kind = 'period') = (period IS NOT NULL)),
            purchase_seq BIGINT UNIQUE REFERENCES transactions (seq),
            active BIGINT NOT NULL CHECK (active IN (0, 1)),
            FOREIGN KEY (player_id, name) REFERENCES entitlements (player_id, name)
        )
        """,
        "CREATE INDEX entitlement_items_owner ON entitlement_items (player_id, name, seq)",
    ]

    /// The voids stores reported of credited purchases, and leases on work one instance at a time
    /// does (schema.sql's `store_voids` and `work_leases`).
    static let storeVoidsAndLeases = [
        """
        CREATE TABLE store_voids (
            store TEXT COLLATE "C" NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
            store_transaction_id TEXT COLLATE "C" NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
            void_id TEXT COLLATE "C" NOT NULL CHECK (length(void_id) BETWEEN 1 AND 255),
            units BIGINT CHECK (units IS NULL OR units BETWEEN 1 AND 100),
            refund_seq BIGINT REFERENCES transactions (seq),
            recorded_at TEXT COLLATE "C" NOT NULL CHECK (length(recorded_at) = 24),
            PRIMARY KEY (store, store_transaction_id, void_id)
        )
        """,
        """
        CREATE TABLE work_leases (
            name TEXT COLLATE "C" PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
            holder TEXT COLLATE "C" NOT NULL CHECK (length(holder) BETWEEN 1 AND 64),
            expires_at TEXT COLLATE "C" NOT NULL CHECK (length(expires_at) = 24)
        )
        """,
    ]

    /// Where the ledger's events are pushed, and how far each endpoint has come (schema.sql's
    /// `webhook_endpoints`).
    static let webhookEndpoints = [
        """
        CREATE TABLE webhook_endpoints (
            id TEXT COLLATE "C" PRIMARY KEY CHECK (length(id) = 39 AND left(id, 3) = 'wh_'),
            url TEXT COLLATE "C" NOT NULL CHECK (length(url) BETWEEN 8 AND 2048),
            types TEXT COLLATE "C" NOT NULL CHECK (length(types) BETWEEN 1 AND 1024),
            description TEXT COLLATE "C" CHECK (description IS NULL OR length(description) BETWEEN 1 AND 200),
            secret TEXT COLLATE "C" NOT NULL CHECK (length(secret) BETWEEN 16 AND 128),
            previous_secret TEXT COLLATE "C" CHECK (previous_secret IS NULL OR length(previous_secret) BETWEEN 16 AND 128),
            previous_secret_expires_at TEXT COLLATE "C" CHECK (previous_secret_expires_at IS NULL OR length(previous_secret_expires_at) = 24),
            secret_rotated_at TEXT COLLATE "C" CHECK (secret_rotated_at IS NULL OR length(secret_rotated_at) = 24),
            status TEXT COLLATE "C" NOT NULL CHECK (status IN ('active', 'failing', 'disabled')),
            cursor_seq BIGINT NOT NULL CHECK (cursor_seq >= 0),
            created_at TEXT COLLATE "C" NOT NULL CHECK (length(created_at) = 24),
            updated_at TEXT COLLATE "C" NOT NULL CHECK (length(updated_at) = 24),
            delivered BIGINT NOT NULL CHECK (delivered >= 0),
            attempts BIGINT NOT NULL CHECK (attempts >= 0),
            failing_since TEXT COLLATE "C" CHECK (failing_since IS NULL OR length(failing_since) = 24),
            next_attempt_at TEXT COLLATE "C" NOT NULL CHECK (length(next_attempt_at) = 24),
            last_error TEXT COLLATE "C" CHECK (last_error IS NULL OR length(last_error) <= 1200),
            last_delivered_at TEXT COLLATE "C" CHECK (last_delivered_at IS NULL OR length(last_delivered_at) = 24),
            claim_holder TEXT COLLATE "C" CHECK (claim_holder IS NULL OR length(claim_holder) BETWEEN 1 AND 64),
            claim_until TEXT COLLATE "C" CHECK (claim_until IS NULL OR length(claim_until) = 24)
        )
        """,
    ]

    /// The kinds of transaction (schema.sql's `transaction_kinds`), one row per `TransactionKind`.
    static let transactionKinds = #"CREATE TABLE transaction_kinds (kind TEXT COLLATE "C" PRIMARY KEY)"#

    /// The name of the reference from `transactions.kind` to `transaction_kinds`, by which
    /// `PostgresEngine` tells a kind the database lacks from other missing rows.
    static let kindReference = "transactions_kind_fkey"

    /// The kinds of transaction version 3 listed in a CHECK on `transactions.kind`, which
    /// version 4 replaced with a reference to `transaction_kinds`.
    static let kindCheck = "kind IN ('purchase', 'spend', 'adjustment', 'refund', 'refund_reversal', 'bonus', 'expiry', 'hold', 'capture', 'release')"

    /// Only adjustments and bonuses carry a reason code (schema.sql's CHECK).
    static let reasonCodeCheck = "kind IN ('adjustment', 'bonus') OR reason_code IS NULL"

    /// A player's notifications are found through the purchases their store transactions credited.
    static let notificationsByPurchase = "CREATE INDEX store_notifications_purchase ON store_notifications (store, store_transaction_id, received_at)"

    /// A wallet's open lots in burn order (schema.sql's `lots_burn`, which says why).
    static let lotsBurn = """
        CREATE INDEX lots_burn ON lots (account_id, (CASE WHEN expires_at IS NOT NULL THEN 0 WHEN category = 'paid' THEN 2 ELSE 1 END), expires_at, created_at, id)
            WHERE remaining > 0
        """

    /// Credit lots, their draws, and holds (schema.sql's `lots`, `lot_draws` and `holds`).
    static let lotsAndHolds = [
        """
        CREATE TABLE lots (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            account_id BIGINT NOT NULL REFERENCES accounts (id),
            category TEXT COLLATE "C" NOT NULL CHECK (category IN ('paid', 'bonus', 'adjustment', 'opening')),
            amount BIGINT NOT NULL CHECK (amount >= 1),
            remaining BIGINT NOT NULL CHECK (remaining BETWEEN 0 AND amount),
            created_at TEXT COLLATE "C" NOT NULL CHECK (length(created_at) = 24),
            expires_at TEXT COLLATE "C" CHECK (expires_at IS NULL OR (category = 'bonus' AND length(expires_at) = 24)),
            source_seq BIGINT NOT NULL REFERENCES transactions (seq)
        )
        """,
        lotsBurn,
        "CREATE INDEX lots_expiring ON lots (expires_at) WHERE remaining > 0 AND expires_at IS NOT NULL",
        """
        CREATE TABLE lot_draws (
            seq BIGINT NOT NULL REFERENCES transactions (seq),
            lot_id BIGINT NOT NULL REFERENCES lots (id),
            amount BIGINT NOT NULL CHECK (amount <> 0),
            PRIMARY KEY (seq, lot_id)
        )
        """,
        "CREATE INDEX lot_draws_lot ON lot_draws (lot_id, seq)",
        """
        CREATE TABLE holds (
            id TEXT COLLATE "C" PRIMARY KEY CHECK (length(id) = 36),
            player_id TEXT COLLATE "C" NOT NULL CHECK (length(player_id) BETWEEN 1 AND 255),
            currency TEXT COLLATE "C" NOT NULL REFERENCES currencies (code),
            amount BIGINT NOT NULL CHECK (amount >= 1),
            status TEXT COLLATE "C" NOT NULL CHECK (status IN ('open', 'captured', 'released', 'expired')),
            expires_at TEXT COLLATE "C" NOT NULL CHECK (length(expires_at) = 24),
            hold_seq BIGINT NOT NULL REFERENCES transactions (seq),
            resolved_seq BIGINT REFERENCES transactions (seq),
            captured BIGINT CHECK (captured IS NULL OR captured BETWEEN 0 AND amount),
            CHECK ((status = 'open') = (resolved_seq IS NULL)),
            CHECK ((status = 'captured') = (captured IS NOT NULL))
        )
        """,
        "CREATE INDEX holds_player ON holds (player_id, hold_seq)",
        "CREATE INDEX holds_open_expiry ON holds (expires_at) WHERE status = 'open'",
    ]

    /// One `opening` lot per positive player balance when lots begin (as SQLite's upgrade).
    static let openingLots = """
        INSERT INTO lots (account_id, category, amount, remaining, created_at, expires_at, source_seq)
            SELECT a.id, 'opening', a.balance, a.balance, t.created_at, NULL, t.seq
            FROM accounts a JOIN transactions t ON t.seq = (SELECT max(p.seq) FROM postings p WHERE p.account_id = a.id)
            WHERE substr(a.owner, 1, 7) = 'player:' AND a.balance > 0
            ORDER BY a.id
        """
}
