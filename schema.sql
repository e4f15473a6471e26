-- CreditsWallet ledger schema, version 10.
--
-- This file is the one source of truth for the schema. The `wallet` binary embeds an identical
-- copy (Sources/WalletSQLite/Schema.swift, checked by a test) and applies it to an empty
-- database in one transaction. Money is INTEGER whole units; timestamps are RFC 3339 UTC text
-- with milliseconds, so they sort as text.

-- Known currency codes. `credits` always exists; a product may introduce another.
CREATE TABLE currencies (
    code TEXT PRIMARY KEY NOT NULL
        CHECK (length(code) BETWEEN 1 AND 16 AND code NOT GLOB '*[^a-z0-9_]*' AND code GLOB '[a-z]*')
) STRICT;

INSERT INTO currencies (code) VALUES ('credits');

-- The kinds of transaction, one row per case of `TransactionKind` (WalletCore). The rows come from
-- that enum, not from this file: each time a wallet opens the database it inserts the kinds it
-- knows that are missing (`SchemaMigrator.transactionKindRows`), so a new kind is one Core case
-- and one row, with no change here. A kind in use cannot be deleted: `transactions` references it.
CREATE TABLE transaction_kinds (
    kind TEXT PRIMARY KEY NOT NULL
) STRICT;

-- One account per (owner, currency). Players are `player:<id>`; system accounts start with `@`.
-- `balance` is materialised: it always equals the sum of the account's postings.
CREATE TABLE accounts (
    id INTEGER PRIMARY KEY NOT NULL,
    owner TEXT NOT NULL CHECK (length(owner) BETWEEN 2 AND 300),
    currency TEXT NOT NULL REFERENCES currencies (code),
    balance INTEGER NOT NULL DEFAULT 0,
    UNIQUE (owner, currency)
) STRICT;

-- The catalog: what one unit of a store product credits, and the entitlement it grants: a
-- consumable credits only; a non-consumable grants its entitlement for ever, a non-renewing pass
-- for its ISO 8601 `duration`, each with credits or none (0).
CREATE TABLE products (
    product_id TEXT PRIMARY KEY NOT NULL CHECK (length(product_id) BETWEEN 1 AND 255),
    currency TEXT NOT NULL REFERENCES currencies (code),
    credits INTEGER NOT NULL CHECK (credits BETWEEN 0 AND 1000000000),
    store TEXT CHECK (store IS NULL OR length(store) BETWEEN 1 AND 32),
    active INTEGER NOT NULL CHECK (active IN (0, 1)),
    updated_at TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT 'consumable' CHECK (type IN ('consumable', 'non_consumable', 'non_renewing')),
    entitlement TEXT CHECK (entitlement IS NULL OR length(entitlement) BETWEEN 1 AND 64),
    duration TEXT CHECK (duration IS NULL OR length(duration) BETWEEN 3 AND 32),
    CHECK ((type = 'consumable') = (entitlement IS NULL)),
    CHECK ((type = 'non_renewing') = (duration IS NOT NULL)),
    CHECK (type <> 'consumable' OR credits >= 1)
) STRICT;

-- One row per business event. `seq` is global and gap-free; `hash` chains every row to the one
-- before it (see DESIGN.md, "Audit"). Rows are never updated or deleted. `id` (a random UUID) and
-- `hash` carry no index: nothing looks them up, and each index costs a random page per write.
CREATE TABLE transactions (
    seq INTEGER PRIMARY KEY NOT NULL CHECK (seq >= 1),
    id TEXT NOT NULL CHECK (length(id) = 36),
    kind TEXT NOT NULL REFERENCES transaction_kinds (kind),
    player_id TEXT NOT NULL CHECK (length(player_id) BETWEEN 1 AND 255),
    currency TEXT NOT NULL REFERENCES currencies (code),
    amount INTEGER NOT NULL,
    actor TEXT NOT NULL CHECK (length(actor) BETWEEN 1 AND 255),
    created_at TEXT NOT NULL CHECK (length(created_at) = 24),
    idempotency_key TEXT CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 255),
    store TEXT,
    store_transaction_id TEXT,
    product_id TEXT,
    quantity INTEGER CHECK (quantity IS NULL OR quantity >= 1),
    reason_code TEXT,
    note TEXT,
    ticket TEXT,
    refund_of_seq INTEGER REFERENCES transactions (seq),
    uncollected INTEGER NOT NULL DEFAULT 0 CHECK (uncollected >= 0),
    metadata TEXT CHECK (metadata IS NULL OR json_valid(metadata)),
    prev_hash TEXT NOT NULL CHECK (length(prev_hash) = 64),
    hash TEXT NOT NULL CHECK (length(hash) = 64),
    CHECK ((kind = 'purchase') = (store IS NOT NULL AND store_transaction_id IS NOT NULL AND product_id IS NOT NULL AND quantity IS NOT NULL)),
    CHECK ((kind IN ('refund', 'refund_reversal')) = (refund_of_seq IS NOT NULL)),
    CHECK (kind IN ('adjustment', 'bonus') OR reason_code IS NULL),
    CHECK (kind <> 'adjustment' OR (reason_code IS NOT NULL AND note IS NOT NULL))
) STRICT;

-- A store transaction credits at most once, whoever redeems it.
CREATE UNIQUE INDEX transactions_purchase_store_transaction
    ON transactions (store, store_transaction_id) WHERE kind = 'purchase';
-- A purchase may be refunded in steps (a support refund of half, then the store's full refund)
-- and a refund reversed: the corrections of a purchase, in seq order.
CREATE INDEX transactions_corrections ON transactions (refund_of_seq, seq) WHERE refund_of_seq IS NOT NULL;
CREATE INDEX transactions_player ON transactions (player_id, seq);
CREATE INDEX transactions_created_at ON transactions (created_at);

-- The legs of a transaction; the amounts of one transaction sum to zero per currency.
-- `balance_after` is the account's balance once this posting applied.
CREATE TABLE postings (
    seq INTEGER NOT NULL REFERENCES transactions (seq),
    account_id INTEGER NOT NULL REFERENCES accounts (id),
    amount INTEGER NOT NULL,
    balance_after INTEGER NOT NULL,
    PRIMARY KEY (seq, account_id)
) STRICT, WITHOUT ROWID;

-- Every idempotency key ever used, kept as long as the ledger. `scope` is `spend:<player id>` or
-- `adjustment:<player id>` for callers' keys (a player cannot take a key support will use),
-- `purchase:<store>` for store transactions, `refund:<store>:<share>` and
-- `refund_reversal:<store>:<refund seq>` for corrections. Version 1 kept spends and adjustments
-- under `wallet:<player id>`: the upgrade copies those keys into their new scopes. Its
-- `refund:<store>` and `refund_reversal:<store>` keys stay as history; a refund sent again after
-- the upgrade is judged by the share already refunded (409 `already_refunded`, nothing moves).
-- `request_hash` is the SHA-256 of the canonical request, so a replay is told from a reuse.
CREATE TABLE idempotency_keys (
    scope TEXT NOT NULL CHECK (length(scope) BETWEEN 1 AND 300),
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash TEXT NOT NULL CHECK (length(request_hash) = 64),
    seq INTEGER NOT NULL REFERENCES transactions (seq),
    PRIMARY KEY (scope, key)
) STRICT, WITHOUT ROWID;

-- API keys, stored only as the SHA-256 of the secret. A revoked key stays, for the actors it names.
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    role TEXT NOT NULL CHECK (role IN ('admin', 'service', 'support', 'auditor')),
    key_hash TEXT NOT NULL UNIQUE CHECK (length(key_hash) = 64),
    created_at TEXT NOT NULL,
    revoked_at TEXT
) STRICT;

-- Store notifications (App Store Server Notifications V2), once each by their UUID, with what the
-- wallet did about them. `ledger_seq` is the transaction a notification caused, if any.
CREATE TABLE store_notifications (
    notification_uuid TEXT PRIMARY KEY NOT NULL CHECK (length(notification_uuid) BETWEEN 1 AND 64),
    store TEXT NOT NULL,
    notification_type TEXT NOT NULL CHECK (length(notification_type) BETWEEN 1 AND 64),
    subtype TEXT,
    store_transaction_id TEXT,
    outcome TEXT NOT NULL,
    ledger_seq INTEGER REFERENCES transactions (seq),
    spent_share_thousandths INTEGER CHECK (spent_share_thousandths IS NULL OR spent_share_thousandths BETWEEN 0 AND 100000),
    received_at TEXT NOT NULL
) STRICT;

-- A player's notifications are found through the purchases their store transactions credited.
CREATE INDEX store_notifications_purchase ON store_notifications (store, store_transaction_id, received_at);

-- The latest state a store reported for one of its transactions, by the report's own signing
-- time (`reported_at`, milliseconds since 1970): reports arrive in any order, and the ledger
-- follows the latest one. A transaction reported refunded is never credited afterwards.
CREATE TABLE store_transaction_states (
    store TEXT NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
    store_transaction_id TEXT NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
    state TEXT NOT NULL CHECK (state IN ('refunded', 'refund_reversed')),
    share_thousandths INTEGER NOT NULL CHECK (share_thousandths BETWEEN 0 AND 100000),
    reported_at INTEGER NOT NULL,
    PRIMARY KEY (store, store_transaction_id)
) STRICT, WITHOUT ROWID;

-- Which player an App Store `appAccountToken` (a UUID, kept lowercase) belongs to: bound by the
-- first credit that carries it, so a purchase made for one player's account never credits another.
CREATE TABLE store_account_tokens (
    store TEXT NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
    token TEXT NOT NULL CHECK (length(token) = 36 AND token NOT GLOB '*[^0-9a-f-]*'),
    player_id TEXT NOT NULL CHECK (length(player_id) BETWEEN 1 AND 255),
    seq INTEGER NOT NULL REFERENCES transactions (seq),
    PRIMARY KEY (store, token)
) STRICT, WITHOUT ROWID;

-- Replies the wallet owes a store, queued in the same write as the notification that asked for
-- them (a transactional outbox) and sent by `wallet serve` until the store accepts one or its
-- deadline passes: App Store consumption information (Send Consumption Information V2), once
-- per CONSUMPTION_REQUEST. `next_attempt_at` is when an instance may try next (a claim moves it on).
CREATE TABLE consumption_replies (
    notification_uuid TEXT PRIMARY KEY NOT NULL REFERENCES store_notifications (notification_uuid),
    store TEXT NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
    store_transaction_id TEXT NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
    environment TEXT NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    delivered INTEGER NOT NULL CHECK (delivered IN (0, 1)),
    spent_share_millipercent INTEGER CHECK (spent_share_millipercent IS NULL OR spent_share_millipercent BETWEEN 0 AND 100000),
    sample_content_provided INTEGER NOT NULL CHECK (sample_content_provided IN (0, 1)),
    refund_preference TEXT CHECK (refund_preference IS NULL OR refund_preference IN ('DECLINE', 'GRANT_FULL', 'GRANT_PRORATED')),
    created_at TEXT NOT NULL,
    deadline TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'expired', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TEXT NOT NULL,
    last_error TEXT,
    finished_at TEXT
) STRICT;

CREATE INDEX consumption_replies_due ON consumption_replies (next_attempt_at) WHERE status = 'pending';

-- What a store reported about a purchase beyond what the grant books (Google Play: the order id,
-- the purchase's type and billing region), written with the credit, once per store transaction.
-- Support finds a purchase by its order id. Version 6 kept none.
CREATE TABLE store_purchases (
    store TEXT NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
    store_transaction_id TEXT NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
    order_id TEXT CHECK (order_id IS NULL OR length(order_id) BETWEEN 1 AND 255),
    purchase_type TEXT NOT NULL CHECK (purchase_type IN ('paid', 'test', 'promo', 'rewarded')),
    region TEXT CHECK (region IS NULL OR length(region) BETWEEN 2 AND 8),
    seq INTEGER NOT NULL REFERENCES transactions (seq),
    PRIMARY KEY (store, store_transaction_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX store_purchases_order ON store_purchases (store, order_id) WHERE order_id IS NOT NULL;
CREATE UNIQUE INDEX store_purchases_seq ON store_purchases (seq);

-- Purchases the wallet must finish on the store's side (Google Play: consume a consumable or a
-- pass, acknowledge a non-consumable), queued in the credit's own write (a transactional outbox)
-- and tried by `wallet serve` until the store takes it or answers that it was finished already.
-- `next_attempt_at` moves on with each claim. `action` is decided by the product's type at the
-- credit (`PurchaseFinish.Action`); version 7's rows, all consumables, are consumed.
CREATE TABLE purchase_finishes (
    store TEXT NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
    store_transaction_id TEXT NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
    product_id TEXT NOT NULL CHECK (length(product_id) BETWEEN 1 AND 255),
    status TEXT NOT NULL CHECK (status IN ('pending', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    created_at TEXT NOT NULL,
    next_attempt_at TEXT NOT NULL,
    last_error TEXT,
    finished_at TEXT,
    action TEXT NOT NULL CHECK (action IN ('consume', 'acknowledge')),
    PRIMARY KEY (store, store_transaction_id),
    FOREIGN KEY (store, store_transaction_id) REFERENCES store_purchases (store, store_transaction_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX purchase_finishes_due ON purchase_finishes (next_attempt_at) WHERE status = 'pending';

-- The voids a store reported of a credited purchase, each once by the store's name for it (Google
-- Play: its order id and voided time), with the units it voided (NULL: the whole purchase) and the
-- refund it caused, if any (none when earlier voids had taken as much): written in that refund's own
-- write. A purchase's voids add up from these rows, since the store lists each for a while only
-- (Google: 30 days). Version 7 kept none.
CREATE TABLE store_voids (
    store TEXT NOT NULL CHECK (length(store) BETWEEN 1 AND 32),
    store_transaction_id TEXT NOT NULL CHECK (length(store_transaction_id) BETWEEN 1 AND 255),
    void_id TEXT NOT NULL CHECK (length(void_id) BETWEEN 1 AND 255),
    units INTEGER CHECK (units IS NULL OR units BETWEEN 1 AND 100),
    refund_seq INTEGER REFERENCES transactions (seq),
    recorded_at TEXT NOT NULL CHECK (length(recorded_at) = 24),
    PRIMARY KEY (store, store_transaction_id, void_id)
) STRICT, WITHOUT ROWID;

-- Work one instance at a time does (Google Play's catch-up): a run takes the lease by name until it
-- gives it back or `expires_at` passes, so a crashed run holds it no longer; a run that finds it held
-- skips. Version 7 kept none.
CREATE TABLE work_leases (
    name TEXT PRIMARY KEY NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    holder TEXT NOT NULL CHECK (length(holder) BETWEEN 1 AND 64),
    expires_at TEXT NOT NULL CHECK (length(expires_at) = 24)
) STRICT, WITHOUT ROWID;

-- Webhook endpoints: where the ledger's events are pushed. The ledger is their queue: every
-- transaction after `cursor_seq` is waiting for the endpoint, durable in the write that made it, and
-- the sender moves the cursor past each event the endpoint accepted (or does not want). The secret
-- signs deliveries, so it is kept as it is (the previous one signs too until
-- `previous_secret_expires_at`). A sender holds an endpoint under `claim_holder` until `claim_until`,
-- so one instance at a time delivers to it, in seq order. Version 8 kept none.
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 39 AND id GLOB 'wh_*'),
    url TEXT NOT NULL CHECK (length(url) BETWEEN 8 AND 2048),
    types TEXT NOT NULL CHECK (length(types) BETWEEN 1 AND 1024),
    description TEXT CHECK (description IS NULL OR length(description) BETWEEN 1 AND 200),
    secret TEXT NOT NULL CHECK (length(secret) BETWEEN 16 AND 128),
    previous_secret TEXT CHECK (previous_secret IS NULL OR length(previous_secret) BETWEEN 16 AND 128),
    previous_secret_expires_at TEXT CHECK (previous_secret_expires_at IS NULL OR length(previous_secret_expires_at) = 24),
    secret_rotated_at TEXT CHECK (secret_rotated_at IS NULL OR length(secret_rotated_at) = 24),
    status TEXT NOT NULL CHECK (status IN ('active', 'failing', 'disabled')),
    cursor_seq INTEGER NOT NULL CHECK (cursor_seq >= 0),
    created_at TEXT NOT NULL CHECK (length(created_at) = 24),
    updated_at TEXT NOT NULL CHECK (length(updated_at) = 24),
    delivered INTEGER NOT NULL CHECK (delivered >= 0),
    attempts INTEGER NOT NULL CHECK (attempts >= 0),
    failing_since TEXT CHECK (failing_since IS NULL OR length(failing_since) = 24),
    next_attempt_at TEXT NOT NULL CHECK (length(next_attempt_at) = 24),
    last_error TEXT CHECK (last_error IS NULL OR length(last_error) <= 1200),
    last_delivered_at TEXT CHECK (last_delivered_at IS NULL OR length(last_delivered_at) = 24),
    claim_holder TEXT CHECK (claim_holder IS NULL OR length(claim_holder) BETWEEN 1 AND 64),
    claim_until TEXT CHECK (claim_until IS NULL OR length(claim_until) = 24)
) STRICT, WITHOUT ROWID;

-- Credit lots (see `LotRules`): every credit of a player's wallet is a lot; debits draw from
-- the open ones in one burn order, and `lot_draws` records each transaction's breakdown. A lot's
-- `remaining` is its amount less what draws took (plus what releases gave back). Only bonus lots
-- expire. Version 4 kept no lots: its upgrade gives each positive player balance one `opening`
-- lot, dated and sourced by the account's last transaction.
CREATE TABLE lots (
    id INTEGER PRIMARY KEY NOT NULL,
    account_id INTEGER NOT NULL REFERENCES accounts (id),
    category TEXT NOT NULL CHECK (category IN ('paid', 'bonus', 'adjustment', 'opening')),
    amount INTEGER NOT NULL CHECK (amount >= 1),
    remaining INTEGER NOT NULL CHECK (remaining BETWEEN 0 AND amount),
    created_at TEXT NOT NULL CHECK (length(created_at) = 24),
    expires_at TEXT CHECK (expires_at IS NULL OR (category = 'bonus' AND length(expires_at) = 24)),
    source_seq INTEGER NOT NULL REFERENCES transactions (seq)
) STRICT;

-- A wallet's open lots in burn order (`LotRules.burnSorted`: expiring lots by expiry, then the
-- other free lots, purchase lots last, each oldest first), so that a debit reads the lots it draws
-- and stops, and expired lots are the head of the order. Version 9 kept them by id (`lots_open`).
CREATE INDEX lots_burn ON lots (account_id, (CASE WHEN expires_at IS NOT NULL THEN 0 WHEN category = 'paid' THEN 2 ELSE 1 END), expires_at, created_at, id)
    WHERE remaining > 0;
CREATE INDEX lots_expiring ON lots (expires_at) WHERE remaining > 0 AND expires_at IS NOT NULL;

-- What each transaction took from (positive) or gave back to (negative) each lot.
CREATE TABLE lot_draws (
    seq INTEGER NOT NULL REFERENCES transactions (seq),
    lot_id INTEGER NOT NULL REFERENCES lots (id),
    amount INTEGER NOT NULL CHECK (amount <> 0),
    PRIMARY KEY (seq, lot_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX lot_draws_lot ON lot_draws (lot_id, seq);

-- Holds: credits reserved in `@holds` (a `hold` transaction) until captured, released or
-- expired (a `capture` or `release` transaction), resolved once. `captured` is what a capture took.
CREATE TABLE holds (
    id TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 36),
    player_id TEXT NOT NULL CHECK (length(player_id) BETWEEN 1 AND 255),
    currency TEXT NOT NULL REFERENCES currencies (code),
    amount INTEGER NOT NULL CHECK (amount >= 1),
    status TEXT NOT NULL CHECK (status IN ('open', 'captured', 'released', 'expired')),
    expires_at TEXT NOT NULL CHECK (length(expires_at) = 24),
    hold_seq INTEGER NOT NULL REFERENCES transactions (seq),
    resolved_seq INTEGER REFERENCES transactions (seq),
    captured INTEGER CHECK (captured IS NULL OR captured BETWEEN 0 AND amount),
    CHECK ((status = 'open') = (resolved_seq IS NULL)),
    CHECK ((status = 'captured') = (captured IS NOT NULL))
) STRICT;

CREATE INDEX holds_player ON holds (player_id, hold_seq);
CREATE INDEX holds_open_expiry ON holds (expires_at) WHERE status = 'open';

-- What each player owns: the state an entitlement's items fold to (see `entitlement_items`),
-- written in the same write as the `entitlement` transaction that changed it (`updated_seq`).
-- `forever` for a non-consumable; otherwise owned until `expires_at` (none: not owned). The game's
-- access check is one read of this primary key.
CREATE TABLE entitlements (
    player_id TEXT NOT NULL CHECK (length(player_id) BETWEEN 1 AND 255),
    name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    forever INTEGER NOT NULL CHECK (forever IN (0, 1)),
    expires_at TEXT CHECK (expires_at IS NULL OR length(expires_at) = 24),
    updated_seq INTEGER NOT NULL REFERENCES transactions (seq),
    PRIMARY KEY (player_id, name)
) STRICT, WITHOUT ROWID;

-- What an entitlement folds: each row added by one `entitlement` transaction (`seq`): a store
-- purchase (`purchase_seq`, at most one item each) or a support grant or extension, for a
-- `period` or for ever, from `starts_at`; or a support revocation at `starts_at`. A refund makes
-- a purchase's item inactive, its reversal active again; nothing is deleted.
CREATE TABLE entitlement_items (
    seq INTEGER PRIMARY KEY NOT NULL REFERENCES transactions (seq),
    player_id TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('period', 'forever', 'revoke')),
    starts_at TEXT NOT NULL CHECK (length(starts_at) = 24),
    period TEXT CHECK ((kind = 'period') = (period IS NOT NULL)),
    purchase_seq INTEGER UNIQUE REFERENCES transactions (seq),
    active INTEGER NOT NULL CHECK (active IN (0, 1)),
    FOREIGN KEY (player_id, name) REFERENCES entitlements (player_id, name)
) STRICT;

CREATE INDEX entitlement_items_owner ON entitlement_items (player_id, name, seq);

-- The ledger is append-only: these triggers refuse edits and deletions, and out-of-order rows.
CREATE TRIGGER transactions_append_only_update BEFORE UPDATE ON transactions
BEGIN
    SELECT RAISE(ABORT, 'ledger transactions are append-only');
END;

CREATE TRIGGER transactions_append_only_delete BEFORE DELETE ON transactions
BEGIN
    SELECT RAISE(ABORT, 'ledger transactions are append-only');
END;

CREATE TRIGGER transactions_gap_free BEFORE INSERT ON transactions
WHEN NEW.seq <> (SELECT coalesce(max(seq), 0) + 1 FROM transactions)
BEGIN
    SELECT RAISE(ABORT, 'transaction seq must follow the last one without a gap');
END;

-- A kind the database does not list is refused by the reference to `transaction_kinds`; this
-- trigger refuses it first, to say so: SQLite's foreign-key error names no table or column.
CREATE TRIGGER transactions_known_kind BEFORE INSERT ON transactions
WHEN NOT EXISTS (SELECT 1 FROM transaction_kinds WHERE kind = NEW.kind)
BEGIN
    SELECT RAISE(ABORT, 'transaction_kinds has no row for this transaction''s kind; nothing was written. Opening the database with a wallet that knows the kind adds its row');
END;

CREATE TRIGGER postings_append_only_update BEFORE UPDATE ON postings
BEGIN
    SELECT RAISE(ABORT, 'ledger postings are append-only');
END;

CREATE TRIGGER postings_append_only_delete BEFORE DELETE ON postings
BEGIN
    SELECT RAISE(ABORT, 'ledger postings are append-only');
END;

CREATE TRIGGER idempotency_keys_append_only_update BEFORE UPDATE ON idempotency_keys
BEGIN
    SELECT RAISE(ABORT, 'idempotency keys are kept forever');
END;

CREATE TRIGGER idempotency_keys_append_only_delete BEFORE DELETE ON idempotency_keys
BEGIN
    SELECT RAISE(ABORT, 'idempotency keys are kept forever');
END;

PRAGMA user_version = 11;
