import Foundation
import Testing
@testable import WalletCore
@testable import WalletSQL
import WalletTestSupport

@Suite("Events and webhook rules", .throttled)
struct EventRuleTests {
    @Test("event types parse from names and lists; unknown, empty and mixed-with-* lists are refused")
    func typeLists() throws {
        #expect(try EventType.parseList("refund.applied,purchase.credited") == [.refundApplied, .purchaseCredited])
        #expect(try EventType.parseList(" hold.expired , hold.released ") == [.holdExpired, .holdReleased])
        #expect(try EventType.parseList("*") == nil)
        for bad in ["", "refund", "refund.applied,", "*,refund.applied", "Refund.Applied", "purchase.credited\u{0}", String(repeating: "a,", count: 600)] {
            #expect(throws: WalletError.self, "\(bad.prefix(20))") { try EventType.parseList(bad) }
        }
        #expect(throws: WalletError.self) { try EventType.parse([]) }
        // Every kind of transaction is some type's kind: no transaction is an event nobody can ask for.
        #expect(Set(EventType.allCases.map(\.kind)) == Set(TransactionKind.allCases))
    }

    @Test("webhook URLs: https, or http to an allowed host; no credentials, fragments, odd hosts or private literals")
    func urls() throws {
        let good = try WebhookURL("https://game.example.com/wallet-events?x=1", allowedHosts: [])
        #expect(good.host == "game.example.com" && good.port == 443 && good.isHTTPS && !good.isAllowedHost)
        #expect(try WebhookURL("HTTPS://game.example.com:8443", allowedHosts: []).port == 8443)
        #expect(try WebhookURL("http://[::1]:9/x", allowedHosts: [WebhookURL.allowedHost("[::1]")]).isAllowedHost)
        #expect(WebhookURL.allowedHost(" 127.0.0.1 ") == "127.0.0.1" && WebhookURL.allowedHost("Hooks.Local") == "hooks.local")
        #expect(try WebhookURL("https://[2606:4700::1111]:8443/x", allowedHosts: []).host == "2606:4700::1111")
        #expect(try WebhookURL("http://127.0.0.1:9/x", allowedHosts: ["127.0.0.1"]).isAllowedHost)
        #expect(try WebhookURL("https://93.184.216.34/hook", allowedHosts: []).host == "93.184.216.34")
        let refused = [
            "file:///etc/passwd", "ftp://example.com/", "http://game.example.com/", "https://", "https:///path", "https://user:pw@example.com/",
            "https://example.com@127.0.0.1/", "https://example.com/#frag", "https://exa mple.com/", "https://example.com:0/", "https://example.com:65536/",
            "https://example.com:/", "https://10.0.0.1/", "https://127.0.0.1/", "https://169.254.169.254/latest/meta-data", "https://[::1]/",
            "https://[fe80::1]/", "https://[::ffff:127.0.0.1]/", "https://localhost/", "https://a.localhost/", "https://2130706433/", "https://0x7f.1/",
            "https://127.1/", "https://0177.0.0.1/", "https://exämple.com/", "https://-bad.example.com/", "https://example.com\\@evil/",
            "https://" + String(repeating: "a", count: 2_050), "javascript:alert(1)", "https://[::1/",
            // The HTTP client connects to the host as written, the checked address is pinned under the lowercase one.
            "https://Rebind.attacker.example/x", "https://example.com:+443/", "https://example.com:４43/",
        ]
        for url in refused {
            #expect(throws: WalletError.self, "\(url.prefix(60))") { try WebhookURL(url, allowedHosts: []) }
        }
        // An allowed host takes plain HTTP and any address, and nothing else changes.
        #expect(throws: WalletError.self) { try WebhookURL("http://10.0.0.1/", allowedHosts: ["127.0.0.1"]) }
    }

    @Test("addresses: loopback, private, link-local, shared, documentation, multicast and mapped ones are not public")
    func addresses() throws {
        let notPublic = [
            "0.0.0.0", "10.1.2.3", "100.64.0.1", "127.0.0.1", "127.255.255.254", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.168.1.1",
            "192.0.2.1", "198.18.0.1", "224.0.0.1", "240.0.0.1", "255.255.255.255", "::", "::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "64:ff9b::a00:1",
            "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "2001:db8::1", "::127.0.0.1",
        ]
        for text in notPublic {
            let address = try #require(NetworkAddress(literal: text), "\(text)")
            #expect(!address.isPublic, "\(text) counted as public")
        }
        for text in ["93.184.216.34", "172.32.0.1", "100.128.0.1", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"] {
            let address = try #require(NetworkAddress(literal: text), "\(text)")
            #expect(address.isPublic, "\(text) counted as not public: \(address.nonPublicRange ?? "")")
        }
        #expect(NetworkAddress(literal: "example.com") == nil && NetworkAddress(literal: "1.2.3") == nil)
        #expect(NetworkAddress(literal: "::ffff:127.0.0.1")?.text == "::ffff:127.0.0.1")
    }

    @Test("signatures: t and one v1 per secret over \"t.body\"; verified with either secret, refused when stale, altered or under another secret")
    func signatures() throws {
        let body = Data(#"{"id":"e1","seq":7}"#.utf8)
        let now = Date()
        let t = Int64(now.timeIntervalSince1970)
        let header = WebhookSignature.header(timestamp: t, body: body, secrets: ["whsec_new_secret_value", "whsec_old_secret_value"])
        let parts = header.split(separator: ",")
        #expect(parts.count == 3 && parts[0] == "t=\(t)" && parts[1].hasPrefix("v1=") && parts[2].hasPrefix("v1=") && parts[1].count == 67)
        // The documented construction, independently: HMAC-SHA256 of "t.body", hex.
        #expect(String(parts[1].dropFirst(3)) == WebhookSignature.signature(timestamp: t, body: body, secret: "whsec_new_secret_value"))
        #expect(WebhookSignature.verify(header: header, body: body, secret: "whsec_new_secret_value", now: now))
        #expect(WebhookSignature.verify(header: header, body: body, secret: "whsec_old_secret_value", now: now))
        #expect(!WebhookSignature.verify(header: header, body: body, secret: "whsec_other_secret_val", now: now))
        #expect(!WebhookSignature.verify(header: header, body: Data(#"{"id":"e1","seq":8}"#.utf8), secret: "whsec_new_secret_value", now: now))
        #expect(!WebhookSignature.verify(header: header, body: body, secret: "whsec_new_secret_value", now: now.addingTimeInterval(301)))
        #expect(!WebhookSignature.verify(header: "v1=" + String(parts[1].dropFirst(3)), body: body, secret: "whsec_new_secret_value", now: now))
        let secret = WebhookSignature.makeSecret()
        #expect(secret.hasPrefix("whsec_") && secret.count == 49 && secret != WebhookSignature.makeSecret())
    }

    @Test("retries back off from 5 s to an hour with jitter, and the endpoint fails three days after the first failed attempt")
    func retries() {
        #expect(WebhookRetry.delay(afterAttempts: 1, random: 0) == 5)
        #expect(WebhookRetry.delay(afterAttempts: 1, random: 0.999_999) > 2.5)
        #expect(WebhookRetry.delay(afterAttempts: 3, random: 0) == 20)
        #expect(WebhookRetry.delay(afterAttempts: 11, random: 0) == 3_600)
        #expect(WebhookRetry.delay(afterAttempts: Int64.max, random: 0) == 3_600)
        #expect(WebhookRetry.delay(afterAttempts: 11, random: 1) == 1_800)
        let since = Date(timeIntervalSince1970: 1_800_000_000)
        let early = WebhookRetry.afterFailure(attempts: 40, failingSince: since, now: since.addingTimeInterval(3 * 86_400 - 1), random: 0)
        #expect(early.status == .active && early.nextAttemptAt > since.addingTimeInterval(3 * 86_400 - 1))
        #expect(WebhookRetry.afterFailure(attempts: 41, failingSince: since, now: since.addingTimeInterval(3 * 86_400), random: 0).status == .failing)
    }

    @Test("a transaction's event: its type (a hold's release or expiry told apart), balance, refund outcome and entitlement change")
    func eventOfTransaction() throws {
        func transaction(_ kind: TransactionKind, amount: Int64, balance: Int64, metadata: String? = nil) -> LedgerTransaction {
            LedgerTransaction(
                seq: 9, id: "tx", kind: kind, playerID: "p1", currency: "credits", amount: amount, actor: "t", createdAt: "2026-11-24T10:00:00.000Z",
                idempotencyKey: nil, store: nil, storeTransactionID: nil, productID: nil, quantity: nil, reasonCode: nil, note: nil, ticket: nil,
                refundOfSeq: kind == .refund ? 3 : nil, uncollected: kind == .refund ? 2 : 0, metadata: metadata.map { Metadata(canonicalText: $0) },
                prevHash: "", hash: "",
                postings: [
                    Posting(account: "@refunds", currency: "credits", amount: -amount, balanceAfter: 0),
                    Posting(account: "player:p1", currency: "credits", amount: amount, balanceAfter: balance),
                ])
        }
        #expect(LedgerEvent(transaction(.release, amount: 5, balance: 5, metadata: #"{"status":"expired"}"#)).type == .holdExpired)
        #expect(LedgerEvent(transaction(.release, amount: 5, balance: 5, metadata: #"{"status":"released"}"#)).type == .holdReleased)
        let refund = LedgerEvent(transaction(.refund, amount: -8, balance: -3))
        #expect(refund.type == .refundApplied && refund.balance == -3)
        #expect(refund.refund == LedgerEvent.RefundOutcome(purchaseSeq: 3, taken: 8, debt: 3, uncollected: 2))
        let change = LedgerEvent(transaction(.entitlement, amount: 0, balance: 7, metadata: #"{"change":"grant","entitlement":"vip","expires_at":"2026-12-01T00:00:00.000Z","forever":false}"#))
        #expect(change.entitlement == LedgerEvent.EntitlementEvent(name: "vip", change: "grant", forever: false, expiresAt: "2026-12-01T00:00:00.000Z"))
        #expect(change.balance == 7 && change.refund == nil)
    }
}

@Suite("Event feed and webhook endpoints in the store", .throttled)
struct EventStoreTests {
    /// Every kind of event, for `p1`: purchase, spend, adjustment, bonus, hold + capture, hold +
    /// release, hold + expiry, refund, refund reversal, an entitlement grant, a lot's expiry.
    static func seedEveryKind(_ ledger: TestLedger, clock: TestClock) async throws {
        let p1: PlayerID = "p1"
        try await ledger.grant(p1, "buy-1")
        try await ledger.grant(p1, "buy-2")
        try await ledger.spend(p1, 2, key: "s1")
        _ = try await ledger.store.adjust(AdjustRequest(playerID: p1, amount: 3, reasonCode: "goodwill", note: "n", idempotencyKey: "a1", actor: "t"))
        _ = try await ledger.store.bonus(
            BonusRequest(playerID: p1, amount: 4, expiresAt: Timestamp.format(clock.now.addingTimeInterval(60)), reasonCode: "promo", idempotencyKey: "b1", actor: "t"))
        let captured = try await ledger.store.createHold(HoldRequest(playerID: p1, amount: 1, expiresInSeconds: 600, idempotencyKey: "h1", actor: "t"))
        _ = try await ledger.store.resolveHold(HoldResolution(holdID: captured.hold.id, action: .capture(amount: nil), idempotencyKey: "c1", actor: "t"))
        let released = try await ledger.store.createHold(HoldRequest(playerID: p1, amount: 1, expiresInSeconds: 600, idempotencyKey: "h2", actor: "t"))
        _ = try await ledger.store.resolveHold(HoldResolution(holdID: released.hold.id, action: .release, idempotencyKey: "r1", actor: "t"))
        _ = try await ledger.store.createHold(HoldRequest(playerID: p1, amount: 1, expiresInSeconds: 30, idempotencyKey: "h3", actor: "t"))
        _ = try await ledger.store.refund(RefundRequest(store: "apple", storeTransactionID: "buy-2", actor: "t"))
        _ = try await ledger.store.changeEntitlement(
            EntitlementChangeRequest(
                playerID: p1, entitlement: try EntitlementName("vip"), action: .grant(nil), reasonCode: "goodwill", note: "n", idempotencyKey: "e1", actor: "t"))
        clock.advance(120)
        #expect(try await ledger.store.expireHolds(limit: 10) == 1)
        #expect(try await ledger.store.expireLots(limit: 10) == 1)
    }

    @Test("the feed pages through every transaction in seq order as its event; types filter by name; next moves past what was looked through", arguments: TestBackend.all)
    func feed(_ backend: TestBackend) async throws {
        let clock = TestClock(Date())
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        #expect(try await ledger.store.events(EventQuery()) == EventPage(events: [], next: 0))
        try await Self.seedEveryKind(ledger, clock: clock)
        let head = try await ledger.store.head().seq
        var all: [LedgerEvent] = []
        var after: Int64 = 0
        while true {
            let page = try await ledger.store.events(EventQuery(after: after, limit: 3))
            #expect(page.events.count <= 3)
            all += page.events
            if page.events.isEmpty { #expect(page.next == after); break }
            after = page.next
        }
        #expect(all.map(\.seq) == Array(1...head))
        let types = all.map(\.type)
        #expect(Set(types) == Set(EventType.allCases).subtracting([.refundReversed]))
        #expect(types.filter { $0 == .holdExpired }.count == 1 && types.filter { $0 == .holdReleased }.count == 1)
        let refund = try #require(all.first { $0.type == .refundApplied })
        #expect(refund.refund?.taken == 5 && refund.transaction.postings.count == 2 && refund.balance == refund.transaction.postings.first { $0.account == "player:p1" }?.balanceAfter)
        // Filtered: only expiries of holds, though releases share their kind.
        let expired = try await ledger.store.events(EventQuery(after: 0, limit: 10, types: [.holdExpired]))
        #expect(expired.events.map(\.type) == [.holdExpired] && expired.next == head)
        let two = try await ledger.store.events(EventQuery(after: 0, limit: 2, types: [.purchaseCredited, .spendCreated]))
        #expect(two.events.map(\.seq) == [1, 2] && two.next == 2)
        // Past the head: nothing, and the cursor stays where the consumer had it.
        #expect(try await ledger.store.events(EventQuery(after: head + 10)) == EventPage(events: [], next: head + 10))
        #expect(try await ledger.store.events(EventQuery(after: Int64.max)) == EventPage(events: [], next: Int64.max))
        for bad in [EventQuery(after: -1), EventQuery(limit: 0), EventQuery(limit: 501), EventQuery(types: [])] {
            #expect(await walletError { _ = try await ledger.store.events(bad) }?.code == "invalid_request")
        }
        let backlog = try await ledger.store.backlog(after: 0, types: [.holdExpired])
        #expect(backlog.count == 2 && backlog.oldestCreatedAt != nil)
        #expect(try await ledger.store.backlog(after: head, types: nil) == EventBacklog(count: 0, oldestCreatedAt: nil))
        try await ledger.expectIntact()
    }

    // SQLite only: ten thousand grants to pass the window; the window's arithmetic is the store's, written once for both.
    @Test("a rare type over a long ledger: a page looks through at most scanMax transactions and says where it stopped", arguments: [TestBackend.sqlite])
    func scanWindow(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger.withCatalog(backend)
        let p1: PlayerID = "p1"
        let requests = (0..<Int(EventQuery.scanMax) + 5).map { index in
            GrantRequest(playerID: p1, store: "apple", storeTransactionID: "bulk-\(index)", productID: "com.example.consume5credits", actor: "t")
        }
        for chunk in stride(from: 0, to: requests.count, by: 1_000) { _ = try await ledger.store.grantEach(Array(requests[chunk..<min(chunk + 1_000, requests.count)])) }
        try await ledger.spend(p1, 1, key: "rare")
        let first = try await ledger.store.events(EventQuery(after: 0, types: [.spendCreated]))
        #expect(first.events.isEmpty && first.next == EventQuery.scanMax)
        let second = try await ledger.store.events(EventQuery(after: first.next, types: [.spendCreated]))
        #expect(second.events.map(\.type) == [.spendCreated] && second.next == EventQuery.scanMax + 6)
    }

    @Test("endpoints: created at the head, one claim at a time, the cursor moves only from where it is, failures back off, and replay only goes back", arguments: TestBackend.all)
    func endpointLifecycle(_ backend: TestBackend) async throws {
        let clock = TestClock(Date())
        let ledger = try await TestLedger.withCatalog(backend, clock: clock)
        let store = ledger.store
        try await ledger.grant("p1", "before")
        let created = try await store.createWebhook(
            WebhookEndpointRequest(url: "https://game.example.com/events", types: [.refundApplied], description: "refunds"), allowedHosts: [])
        #expect(created.endpoint.cursorSeq == 1 && created.endpoint.status == .active && created.secret.hasPrefix("whsec_"))
        #expect(created.endpoint.typeNames == ["refund.applied"])
        let id = created.endpoint.id
        #expect(try await store.webhooks().map(\.id) == [id])
        // Refused before anything is written.
        for bad in ["file:///etc/passwd", "http://game.example.com/", "https://192.168.0.10/"] {
            #expect(await walletError { _ = try await store.createWebhook(WebhookEndpointRequest(url: bad, types: nil), allowedHosts: []) }?.code == "invalid_request")
        }
        #expect(await walletError { _ = try await store.createWebhook(WebhookEndpointRequest(url: "https://a.example/", types: nil, description: String(repeating: "d", count: 201)), allowedHosts: []) }?.code == "invalid_request")
        #expect(await walletError { _ = try await store.webhook(id: "wh_" + UUID().uuidString.lowercased()) }?.code == "not_found")
        #expect(await walletError { _ = try await store.webhook(id: id.uppercased()) }?.code == "not_found")
        #expect(try await store.webhooks().count == 1)

        // One claim at a time: another holder waits until the lease lapses.
        let claim = try #require(try await store.claimWebhook(id: id, holder: "a", lease: .seconds(30)))
        #expect(claim.secrets == [created.secret] && claim.endpoint.cursorSeq == 1)
        #expect(try await store.claimWebhook(id: id, holder: "b", lease: .seconds(30)) == nil)
        #expect(try await store.advanceWebhook(id: id, holder: "b", from: 1, to: 5, delivered: 1, lease: .seconds(30)) == false)
        #expect(try await store.advanceWebhook(id: id, holder: "a", from: 0, to: 5, delivered: 1, lease: .seconds(30)) == false)
        #expect(try await store.advanceWebhook(id: id, holder: "a", from: 1, to: 3, delivered: 1, lease: .seconds(30)))
        let advanced = try await store.webhook(id: id)
        #expect(advanced.cursorSeq == 3 && advanced.delivered == 1)
        clock.advance(31)
        let taken = try #require(try await store.claimWebhook(id: id, holder: "b", lease: .seconds(30)))
        #expect(taken.endpoint.cursorSeq == 3)
        #expect(try await store.advanceWebhook(id: id, holder: "a", from: 3, to: 4, delivered: 1, lease: .seconds(30)) == false)

        // A sender that lost its claim records nothing, and a cursor never moves back.
        #expect(try await store.failWebhook(id: id, holder: "a", cursor: 3, error: "late", random: 0) == nil)
        #expect(await walletError { _ = try await store.advanceWebhook(id: id, holder: "b", from: 3, to: 2, delivered: 0, lease: .seconds(30)) }?.code == "invalid_request")
        let untouched = try await store.webhook(id: id)
        #expect(untouched.attempts == 0 && untouched.lastError == nil && untouched.cursorSeq == 3)

        // A failed attempt: counted, the claim given up, the next attempt 2.5 to 5 s later.
        let failed = try #require(try await store.failWebhook(id: id, holder: "b", cursor: 3, error: "answered 500", random: 0))
        #expect(failed.attempts == 1 && failed.status == .active && failed.lastError == "answered 500" && failed.failingSince != nil)
        #expect(failed.nextAttemptAt == Timestamp.format(clock.now.addingTimeInterval(5)))
        #expect(try await store.claimWebhook(id: id, holder: "b", lease: .seconds(30)) == nil)
        clock.advance(5)
        _ = try #require(try await store.claimWebhook(id: id, holder: "b", lease: .seconds(30)))
        // Three days of failures make it failing; it is then never claimed until enabled.
        clock.advance(3 * 86_400)
        #expect(try await store.failWebhook(id: id, holder: "b", cursor: 3, error: "answered 503", random: 0)?.status == .failing)
        clock.advance(86_400)
        #expect(try await store.claimWebhook(id: id, holder: "b", lease: .seconds(30)) == nil)
        // A replay of a failing endpoint tries it again at once (nothing skipped: from the cursor on).
        let replayedFailing = try await store.replayWebhook(id: id, fromSeq: 4)
        #expect(replayedFailing.status == .active && replayedFailing.cursorSeq == 3 && replayedFailing.attempts == 0)
        let enabled = try await store.setWebhook(id: id, enabled: true)
        #expect(enabled.status == .active && enabled.attempts == 0 && enabled.failingSince == nil && enabled.cursorSeq == 3)
        #expect(try await store.setWebhook(id: id, enabled: false).status == .disabled)
        #expect(try await store.claimWebhook(id: id, holder: "b", lease: .seconds(30)) == nil)
        _ = try await store.setWebhook(id: id, enabled: true)

        // Replay goes back, never forward, and drops any claim (its holder stops at its next step).
        let held = try #require(try await store.claimWebhook(id: id, holder: "c", lease: .seconds(30)))
        #expect(await walletError { _ = try await store.replayWebhook(id: id, fromSeq: 5) }?.code == "invalid_request")
        #expect(await walletError { _ = try await store.replayWebhook(id: id, fromSeq: 0) }?.code == "invalid_request")
        #expect(try await store.replayWebhook(id: id, fromSeq: 1).cursorSeq == 0)
        #expect(try await store.advanceWebhook(id: id, holder: held.holder, from: 0, to: 1, delivered: 1, lease: .seconds(30)) == false)

        // Rotation: both secrets sign for a day, then the new one alone.
        let rotated = try await store.rotateWebhookSecret(id: id)
        #expect(rotated.secret != created.secret && rotated.endpoint.secretRotatedAt != nil)
        #expect(try await store.claimWebhook(id: id, holder: "d", lease: .seconds(30))?.secrets == [rotated.secret, created.secret])
        clock.advance(86_401)
        #expect(try await store.claimWebhook(id: id, holder: "d", lease: .seconds(30))?.secrets == [rotated.secret])

        // Removed only once disabled (a sender may be delivering to an active one).
        #expect(await walletError { _ = try await store.deleteWebhook(id: id) }?.code == "invalid_request")
        _ = try await store.setWebhook(id: id, enabled: false)
        #expect(try await store.deleteWebhook(id: id).id == id)
        #expect(try await store.webhooks().isEmpty)
        #expect(await walletError { _ = try await store.deleteWebhook(id: id) }?.code == "not_found")
        try await ledger.expectIntact()
    }

    @Test("at most 50 endpoints are kept", arguments: TestBackend.all)
    func endpointCap(_ backend: TestBackend) async throws {
        let ledger = try await TestLedger(backend)
        for index in 0..<WebhookEndpoint.countMax {
            _ = try await ledger.store.createWebhook(WebhookEndpointRequest(url: "https://e\(index).example.com/", types: nil), allowedHosts: [])
        }
        #expect(await walletError { _ = try await ledger.store.createWebhook(WebhookEndpointRequest(url: "https://one-more.example.com/", types: nil), allowedHosts: []) }?.code == "invalid_request")
        // A removed one makes room.
        let first = try #require(try await ledger.store.webhooks().first)
        _ = try await ledger.store.setWebhook(id: first.id, enabled: false)
        _ = try await ledger.store.deleteWebhook(id: first.id)
        _ = try await ledger.store.createWebhook(WebhookEndpointRequest(url: "https://one-more.example.com/", types: nil), allowedHosts: [])
        #expect(try await ledger.store.webhooks().count == WebhookEndpoint.countMax)
    }
}
