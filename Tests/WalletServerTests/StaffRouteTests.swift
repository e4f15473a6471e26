import Foundation
import HTTPTypes
import HummingbirdTesting
import Synchronization
import Testing
@testable import WalletCore
@testable import WalletServer
import WalletTestSupport

/// The staff's reads for the console: a transaction whole, a purchase by its store transaction
/// id, the queues, and the period's totals, breakage and debt.
@Suite("Staff routes", .throttled)
struct StaffRouteTests {
    /// A purchase of 10 (T1), a spend of 8, then a full refund under the debt policy: the wallet
    /// owes 8. Answers the three seqs.
    static func purchaseSpendRefund(_ server: TestServer) async throws -> (purchase: Int64, spend: Int64, refund: Int64) {
        let purchase = try await server.store.grant(
            GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T1", productID: "com.example.consume5credits", quantity: 2, actor: "test"))
        let spend = try await server.store.spend(SpendRequest(playerID: "p1", amount: 8, idempotencyKey: "s1", actor: "test"))
        let refund = try await server.store.refund(RefundRequest(store: "apple", storeTransactionID: "T1", actor: "test"))
        return (purchase.transaction.seq, spend.transaction.seq, refund.transaction.seq)
    }

    @Test("a transaction is answered whole, with its lot draws and its links between purchase and refund", arguments: TestBackend.all)
    func transaction(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        // An empty ledger has no seq 1.
        try await server.test { client in
            let none = try await client.execute(uri: "/v1/transactions/1", method: .get, headers: server.bearer(.support))
            #expect(try none.status == .notFound && none.problemCode() == "not_found")
        }
        let seqs = try await Self.purchaseSpendRefund(server)
        try await server.test { client in
            func detail(_ seq: Int64) async throws -> [String: Any] {
                let response = try await client.execute(uri: "/v1/transactions/\(seq)", method: .get, headers: server.bearer(.support))
                #expect(response.status == .ok)
                return try response.object()
            }
            let purchase = try await detail(seqs.purchase)
            let purchaseTransaction = try #require(purchase["transaction"] as? [String: Any])
            #expect(purchaseTransaction["kind"] as? String == "purchase" && purchaseTransaction["store_transaction_id"] as? String == "T1")
            #expect((purchaseTransaction["hash"] as? String)?.count == 64 && (purchaseTransaction["prev_hash"] as? String)?.count == 64)
            #expect((purchaseTransaction["postings"] as? [Any])?.count == 2)
            #expect(purchase["corrections"] as? [Int] == [Int(seqs.refund)])
            #expect((purchase["lot_draws"] as? [Any])?.isEmpty == true)

            let spend = try await detail(seqs.spend)
            let draws = try #require(spend["lot_draws"] as? [[String: Any]])
            #expect(draws.count == 1)
            #expect(draws.first?["category"] as? String == "paid" && draws.first?["amount"] as? Int == 8)
            #expect(draws.first?["source_seq"] as? Int == Int(seqs.purchase))
            #expect(spend["corrections"] as? [Int] == [])

            let refund = try await detail(seqs.refund)
            #expect((refund["transaction"] as? [String: Any])?["refund_of_seq"] as? Int == Int(seqs.purchase))

            // Other spellings of a seq that exists (+1, 01, 1%20) are refused, not read as 1.
            let spellings = ["abc", "0", "-1", "9223372036854775808", "1.5", "1e3", "+1", "01", "1%20", "%201", "%31", "%EF%BC%91", "-0"]
            for bad in spellings {
                let response = try await client.execute(uri: "/v1/transactions/\(bad)", method: .get, headers: server.bearer(.auditor))
                #expect(response.status == .badRequest, "\(bad)")
                let problem = try? JSONDecoder().decode(Problem.self, from: Data(buffer: response.body))
                #expect(problem?.code == "invalid_request" && problem?.errors?.map(\.field) == ["seq"], "\(bad)")
            }
            let unknown = try await client.execute(uri: "/v1/transactions/\(seqs.refund + 1)", method: .get, headers: server.bearer(.admin))
            #expect(try unknown.status == .notFound && unknown.problemCode() == "not_found")
            let biggest = try await client.execute(uri: "/v1/transactions/9223372036854775807", method: .get, headers: server.bearer(.admin))
            #expect(biggest.status == .notFound)
        }
    }

    @Test("a purchase is found by its store transaction id, with its player and refunds; one never credited is a 404", arguments: TestBackend.all)
    func purchase(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let seqs = try await Self.purchaseSpendRefund(server)
        _ = try await server.store.grant(
            GrantRequest(
                playerID: "p2", store: "google", storeTransactionID: "token-1", productID: "com.example.consume5credits", actor: "test",
                record: StorePurchaseRecord(orderID: "GPA.1234-5678", purchaseType: .paid, region: "FR", finishes: true)))
        try await server.test { client in
            let apple = try await client.execute(uri: "/v1/purchases/apple/T1", method: .get, headers: server.bearer(.support))
            #expect(apple.status == .ok)
            let found = try apple.object()
            #expect(found["player_id"] as? String == "p1")
            #expect((found["purchase"] as? [String: Any])?["seq"] as? Int == Int(seqs.purchase))
            let corrections = try #require(found["corrections"] as? [[String: Any]])
            #expect(corrections.map { $0["seq"] as? Int } == [Int(seqs.refund)] && corrections.first?["kind"] as? String == "refund")
            #expect(found["store_purchase"] == nil)

            let google = try await client.execute(uri: "/v1/purchases/google/token-1", method: .get, headers: server.bearer(.auditor))
            #expect(google.status == .ok)
            let record = try #require(try google.object()["store_purchase"] as? [String: Any])
            #expect(record["order_id"] as? String == "GPA.1234-5678" && record["region"] as? String == "FR")
            #expect(try google.object()["player_id"] as? String == "p2")

            // Another store's id, a store the wallet never credited from, or an id never credited: 404,
            // so the console offers to credit the order.
            for path in ["/v1/purchases/google/T1", "/v1/purchases/steam/T1", "/v1/purchases/apple/T2"] {
                let missing = try await client.execute(uri: path, method: .get, headers: server.bearer(.support))
                #expect(try missing.status == .notFound && missing.problemCode() == "not_found", "\(path)")
            }
            for (path, field) in [("/v1/purchases/Apple/T1", "store"), ("/v1/purchases/apple/T%201", "store_transaction_id")] {
                let bad = try await client.execute(uri: path, method: .get, headers: server.bearer(.support))
                #expect(bad.status == .badRequest, "\(path)")
                #expect(try JSONDecoder().decode(Problem.self, from: Data(buffer: bad.body)).errors?.first?.field == field, "\(path)")
            }
        }
    }

    @Test("a look-alike of a store transaction id or store is refused, naming its field, and never finds the purchase it resembles", arguments: TestBackend.all)
    func lookAlikePurchaseIDs(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", transactionID: "T1")
        // A slash is visible ASCII, so an id may hold one; the path carries it as %2F.
        try await server.credit("p2", transactionID: "T/2")
        try await server.test { client in
            func get(_ path: String) async throws -> TestResponse {
                try await client.execute(uri: "/v1/purchases/\(path)", method: .get, headers: server.bearer(.support))
            }
            for path in ["apple/T%2F2", "apple/T%2f2", "%61pple/T%2F2"] {
                let found = try await get(path)
                #expect(found.status == .ok, "\(path)")
                #expect(try found.object()["player_id"] as? String == "p2", "\(path)")
            }
            // Unescaped, the slash splits the path: no route, and never T/2's or T1's purchase.
            #expect(try await get("apple/T/2").status == .notFound)
            // Ids are compared byte for byte: another case is another id.
            let otherCase = try await get("apple/t1")
            #expect(try otherCase.status == .notFound && otherCase.problemCode() == "not_found")
            let lookAlikes: [(path: String, field: String)] = [
                ("apple/%EF%BB%BFT1", "store_transaction_id"),  // a byte order mark before T1
                ("apple/T1%20", "store_transaction_id"),  // a trailing space
                ("apple/%20T1", "store_transaction_id"),
                ("apple/%D0%A21", "store_transaction_id"),  // CYRILLIC CAPITAL LETTER TE, then 1
                ("apple/T1%E2%80%8B", "store_transaction_id"),  // a zero-width space
                ("apple/T1%00", "store_transaction_id"),
                ("apple/%FF", "store_transaction_id"),  // not UTF-8
                ("apple/T1%2", "store_transaction_id"),  // a broken escape
                ("apple/\(String(repeating: "x", count: Limits.identifierBytesMax + 1))", "store_transaction_id"),
                ("apple%20/T1", "store"),
                ("%D0%B0pple/T1", "store"),  // CYRILLIC SMALL LETTER A
                ("%EF%BB%BFapple/T1", "store"),
                ("Apple/T1", "store"),
                ("%ZZ/T1", "store"),
            ]
            for (path, field) in lookAlikes {
                let refused = try await get(path)
                #expect(refused.status == .badRequest, "\(path)")
                let problem = try? JSONDecoder().decode(Problem.self, from: Data(buffer: refused.body))
                #expect(problem?.code == "invalid_request" && problem?.errors?.map(\.field) == [field], "\(path)")
            }
        }
    }

    @Test("a transaction looks the same on the staff routes as in the wallet's history (the same rules decide what is shown)", arguments: TestBackend.all)
    func sameTransactionEverywhere(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let seqs = try await Self.purchaseSpendRefund(server)
        _ = try await server.store.bonus(
            BonusRequest(playerID: "p1", amount: 4, reasonCode: "event", note: "apology", campaign: "winter", idempotencyKey: "b1", actor: "test"))
        _ = try await server.store.adjust(
            AdjustRequest(playerID: "p1", amount: 10, reasonCode: "goodwill", note: "ticket note", ticket: "T-42", idempotencyKey: "a1", actor: "test"))
        _ = try await server.store.spend(
            SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "s2", reason: "sword", metadata: try Metadata(.object(["item": .string("sword")])), actor: "test"))
        try await server.test { client in
            for role in [KeyRole.support, .auditor] {
                let history = try await client.execute(uri: "/v1/wallets/p1/transactions?limit=50", method: .get, headers: server.bearer(role))
                let rows = try #require(try history.object()["transactions"] as? [[String: Any]])
                #expect(rows.count == 6)
                let bySeq = Dictionary(uniqueKeysWithValues: rows.map { ($0["seq"] as? Int ?? 0, $0) })
                for (seq, row) in bySeq {
                    let detail = try await client.execute(uri: "/v1/transactions/\(seq)", method: .get, headers: server.bearer(role))
                    let transaction = try #require(try detail.object()["transaction"] as? [String: Any])
                    #expect(NSDictionary(dictionary: transaction).isEqual(to: row), "seq \(seq) for \(role.rawValue)")
                }
                let bonus = try #require(rows.first { $0["kind"] as? String == "bonus" })
                #expect((bonus["metadata"] as? [String: Any])?["campaign"] as? String == "winter", "staff see the campaign")
                let adjustment = try #require(rows.first { $0["kind"] as? String == "adjustment" })
                #expect(adjustment["ticket"] as? String == "T-42" && adjustment["note"] as? String == "ticket note")

                let lookup = try await client.execute(uri: "/v1/purchases/apple/T1", method: .get, headers: server.bearer(role))
                let found = try lookup.object()
                #expect(NSDictionary(dictionary: found["purchase"] as? [String: Any] ?? [:]).isEqual(to: bySeq[Int(seqs.purchase)] ?? [:]))
                let corrections = try #require(found["corrections"] as? [[String: Any]])
                #expect(corrections.count == 1 && NSDictionary(dictionary: corrections[0]).isEqual(to: bySeq[Int(seqs.refund)] ?? [:]))
            }
        }
    }

    @Test("the volume answer carries totals per kind, the period's breakage and the debt outstanding now", arguments: TestBackend.all)
    func totals(backend: TestBackend) async throws {
        let now = Mutex(Date())
        let server = try await TestServer(backend, clock: { now.withLock { $0 } })
        let start = now.withLock { $0 }
        _ = try await Self.purchaseSpendRefund(server)
        _ = try await server.store.adjust(AdjustRequest(playerID: "p2", amount: -3, reasonCode: "fraud", note: "n", idempotencyKey: "a1", allowNegative: true, actor: "test"))
        _ = try await server.store.bonus(
            BonusRequest(playerID: "p3", amount: 7, expiresAt: Timestamp.format(start.addingTimeInterval(3_600)), reasonCode: "event", idempotencyKey: "b1", actor: "test"))
        now.withLock { $0 = $0.addingTimeInterval(7_200) }
        #expect(try await server.store.expireLots(limit: 10) == 1)
        let from = Timestamp.format(start.addingTimeInterval(-86_400)), to = Timestamp.format(start.addingTimeInterval(86_400))
        try await server.test { client in
            let response = try await client.execute(uri: "/v1/ledger/volume?from=\(from)&to=\(to)", method: .get, headers: server.bearer(.auditor))
            #expect(response.status == .ok)
            let object = try response.object()
            let totals = try #require(object["totals"] as? [[String: Any]])
            let byKind = Dictionary(uniqueKeysWithValues: totals.map { ($0["kind"] as? String ?? "", ($0["count"] as? Int, $0["amount"] as? Int)) })
            #expect(byKind.keys.sorted() == ["adjustment", "bonus", "expiry", "purchase", "refund", "spend"])
            for (kind, expected) in [("purchase", (1, 10)), ("spend", (1, 8)), ("refund", (1, 10)), ("adjustment", (1, 3)), ("bonus", (1, 7)), ("expiry", (1, 7))] {
                let found = try #require(byKind[kind], "\(kind)")
                #expect(found == expected, "\(kind)")
            }
            #expect(object["breakage"] as? [String: Int] == ["credits": 7])
            // p1 owes 8 (spent, then refunded under the debt policy), p2 owes 3.
            #expect((object["debt"] as? [String: [String: Int]])?["credits"] == ["amount": 11, "wallets": 2])
            let days = try #require(object["days"] as? [[String: Any]])
            #expect(days.compactMap { $0["amount"] as? Int }.reduce(0, +) == totals.compactMap { $0["amount"] as? Int }.reduce(0, +))

            // A period without activity: no totals, no breakage, but the debt is today's.
            let empty = try await client.execute(
                uri: "/v1/ledger/volume?from=2020-01-01T00:00:00Z&to=2020-02-01T00:00:00Z", method: .get, headers: server.bearer(.admin))
            let quiet = try empty.object()
            #expect((quiet["totals"] as? [Any])?.isEmpty == true && (quiet["breakage"] as? [String: Any])?.isEmpty == true)
            #expect((quiet["debt"] as? [String: [String: Int]])?["credits"] == ["amount": 11, "wallets": 2])
        }
    }

    @Test("the outboxes list the three store queues and each webhook endpoint, with pending, failed and the oldest's age", arguments: TestBackend.all)
    func outboxes(backend: TestBackend) async throws {
        // The store writes an hour ago: every waiting item is at least an hour old when read.
        let server = try await TestServer(backend, clock: { Date().addingTimeInterval(-3_600) })
        try await server.test { client in
            let empty = try await client.execute(uri: "/v1/outboxes", method: .get, headers: server.bearer(.auditor))
            #expect(empty.status == .ok)
            let queues = try #require(try empty.object()["queues"] as? [[String: Any]])
            #expect(queues.map { $0["name"] as? String } == ["apple_consumption_replies", "google_consumes", "google_acknowledges"])
            #expect(queues.allSatisfy { $0["pending"] as? Int == 0 && $0["failed"] as? Int == 0 && $0["oldest_pending_age_seconds"] is NSNull })
        }
        _ = try await server.store.grant(
            GrantRequest(
                playerID: "p1", store: "google", storeTransactionID: "token-1", productID: "com.example.consume5credits", actor: "test",
                record: StorePurchaseRecord(orderID: "GPA.1", purchaseType: .paid, region: nil, finishes: true)))
        _ = try await server.store.recordNotification(
            StoreNotification(
                notificationUUID: "n1", store: "apple", type: "CONSUMPTION_REQUEST", subtype: nil, storeTransactionID: "T-unknown", effect: .consumptionRequest,
                actor: "apple", consumptionReply: ConsumptionReplyRequest(environment: "Sandbox", sampleContentProvided: false, refundPreference: nil, deadline: Date().addingTimeInterval(86_400))))
        let webhook = try await server.store.createWebhook(WebhookEndpointRequest(url: "https://hooks.example.com/", types: nil), allowedHosts: [])
        _ = try await server.store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "s1", actor: "test"))
        try await server.test { client in
            let response = try await client.execute(uri: "/v1/outboxes", method: .get, headers: server.bearer(.admin))
            let queues = try #require(try response.object()["queues"] as? [[String: Any]])
            let byName = Dictionary(queues.map { ($0["name"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
            #expect(queues.count == 4)
            for name in ["apple_consumption_replies", "google_consumes", "webhook"] {
                #expect(byName[name]?["pending"] as? Int == 1, "\(name)")
                #expect((byName[name]?["oldest_pending_age_seconds"] as? Int ?? 0) >= 3_600, "\(name)")
            }
            #expect(byName["google_acknowledges"]?["pending"] as? Int == 0)
            #expect(byName["webhook"]?["webhook_id"] as? String == webhook.endpoint.id && byName["webhook"]?["webhook_status"] as? String == "active")
        }
    }

    @Test("the outboxes count what was given up on: replies refused or past their deadline, finishes refused, an endpoint's failed attempts", arguments: TestBackend.all)
    func outboxFailures(backend: TestBackend) async throws {
        let clock = MovingClock()
        let server = try await TestServer(backend, clock: { clock.now })
        _ = try await server.store.setProduct(
            ProductUpdate(productID: "com.example.noads", credits: 0, type: .nonConsumable, entitlement: try EntitlementName("no_ads")))
        for (token, product) in [("token-1", "com.example.consume5credits"), ("token-2", "com.example.consume5credits"), ("token-3", "com.example.noads")] {
            _ = try await server.store.grant(
                GrantRequest(
                    playerID: "p1", store: "google", storeTransactionID: token, productID: product, actor: "test",
                    record: StorePurchaseRecord(orderID: nil, purchaseType: .paid, region: nil, finishes: true)))
        }
        let deadline = clock.now.addingTimeInterval(86_400)
        for uuid in ["n1", "n2", "n3"] {
            _ = try await server.store.recordNotification(
                StoreNotification(
                    notificationUUID: uuid, store: "apple", type: "CONSUMPTION_REQUEST", subtype: nil, storeTransactionID: "T-\(uuid)",
                    effect: .consumptionRequest, actor: "apple",
                    consumptionReply: ConsumptionReplyRequest(environment: "Sandbox", sampleContentProvided: false, refundPreference: nil, deadline: deadline)))
        }
        // Apple: one refused (failed), one whose retry falls past its deadline (expired), one to retry (still pending).
        let replies = try await server.store.claimConsumptionReplies(at: clock.now, limit: 10, lease: .seconds(60))
        #expect(replies.map(\.notificationUUID).sorted() == ["n1", "n2", "n3"])
        for reply in replies {
            let attempt: ConsumptionReply.Attempt = switch reply.notificationUUID {
            case "n1": .refused(error: "400 invalid transaction")
            case "n2": .failed(error: "503", retryAt: deadline.addingTimeInterval(60))
            default: .failed(error: "503", retryAt: clock.now.addingTimeInterval(60))
            }
            _ = try await server.store.finishConsumptionReply(reply, attempt, at: clock.now)
        }
        // Google: a consume and the acknowledgement refused, the other consume to retry.
        let finishes = try await server.store.claimPurchaseFinishes(at: clock.now, limit: 10, lease: .seconds(60))
        #expect(finishes.map(\.storeTransactionID).sorted() == ["token-1", "token-2", "token-3"])
        for finish in finishes {
            let attempt: PurchaseFinish.Attempt =
                finish.storeTransactionID == "token-2" ? .failed(error: "503", retryAt: clock.now.addingTimeInterval(60)) : .refused(error: "410 gone")
            _ = try await server.store.recordPurchaseFinish(finish, attempt, at: clock.now)
        }
        // A webhook endpoint whose receiver answers 500: two passes of the sender, an hour apart, fail twice.
        let receiver = try await WebhookReceiver()
        receiver.script(Array(repeating: .status(500), count: 10))
        let webhook = try await server.store.createWebhook(WebhookEndpointRequest(url: receiver.url, types: nil), allowedHosts: ["127.0.0.1"])
        _ = try await server.store.spend(SpendRequest(playerID: "p1", amount: 1, idempotencyKey: "s1", actor: "test"))
        let sender = WebhookSender(
            store: server.store, settings: WebhookDeliverySettings(allowedHosts: ["127.0.0.1"], lease: .seconds(30), random: { 0 }, clock: { clock.now }),
            logger: TestServer.quietLogger)
        for _ in 0..<2 {
            _ = try await sender.deliverDue()
            clock.advance(3_600)
        }
        await receiver.kill()
        #expect(receiver.deliveries.count == 2)
        try await server.test { client in
            let response = try await client.execute(uri: "/v1/outboxes", method: .get, headers: server.bearer(.auditor))
            #expect(response.status == .ok)
            let queues = try #require(try response.object()["queues"] as? [[String: Any]])
            let counts = queues.map { [$0["name"] as? String ?? "", "\($0["pending"] as? Int ?? -1)", "\($0["failed"] as? Int ?? -1)"] }
            #expect(
                counts == [
                    ["apple_consumption_replies", "1", "2"], ["google_consumes", "1", "1"], ["google_acknowledges", "0", "1"], ["webhook", "1", "2"],
                ])
            #expect(queues.last?["webhook_id"] as? String == webhook.endpoint.id && queues.last?["webhook_status"] as? String == "active")
        }
    }

    @Test("a capture's rest and a release go back to the lots they came from: their lot draws are negative", arguments: TestBackend.all)
    func negativeLotDraws(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        let bonus = try await server.store.bonus(BonusRequest(playerID: "p1", amount: 4, reasonCode: "event", idempotencyKey: "b1", actor: "test"))
        let purchase = try await server.store.grant(
            GrantRequest(playerID: "p1", store: "apple", storeTransactionID: "T1", productID: "com.example.consume5credits", quantity: 2, actor: "test"))
        let lots = try await server.store.lots(LotQuery(playerID: "p1")).lots
        let bonusLot = try #require(lots.first { $0.sourceSeq == bonus.transaction.seq }).id
        let paidLot = try #require(lots.first { $0.sourceSeq == purchase.transaction.seq }).id
        #expect(lots.count == 2 && bonusLot < paidLot)
        // A hold of 7 takes the bonus lot's 4, then 3 of the purchase lot; a capture of 2 keeps 2
        // of the bonus lot and gives the rest back. A hold of 6 then takes the bonus lot's last 2
        // and 4 of the purchase lot, and its release gives them all back.
        let first = try await server.store.createHold(HoldRequest(playerID: "p1", amount: 7, expiresInSeconds: 600, idempotencyKey: "h1", actor: "test"))
        let capture = try await server.store.resolveHold(HoldResolution(holdID: first.hold.id, action: .capture(amount: 2), idempotencyKey: "c1", actor: "test"))
        let second = try await server.store.createHold(HoldRequest(playerID: "p1", amount: 6, expiresInSeconds: 600, idempotencyKey: "h2", actor: "test"))
        let release = try await server.store.resolveHold(HoldResolution(holdID: second.hold.id, action: .release, idempotencyKey: "r1", actor: "test"))
        try await server.test { client in
            func draws(_ seq: Int64) async throws -> [[String: Any]] {
                let response = try await client.execute(uri: "/v1/transactions/\(seq)", method: .get, headers: server.bearer(.auditor))
                #expect(response.status == .ok)
                let draws = try response.object()["lot_draws"] as? [[String: Any]]
                #expect(draws != nil, "seq \(seq) has no lot_draws")
                return draws ?? []
            }
            func lotAndAmount(_ seq: Int64) async throws -> [[Int64]] {
                try await draws(seq).map { [Int64($0["lot_id"] as? Int ?? 0), Int64($0["amount"] as? Int ?? 0)] }
            }
            #expect(try await lotAndAmount(first.transaction.seq) == [[bonusLot, 4], [paidLot, 3]])
            #expect(try await lotAndAmount(capture.transaction.seq) == [[bonusLot, -2], [paidLot, -3]])
            #expect(try await lotAndAmount(second.transaction.seq) == [[bonusLot, 2], [paidLot, 4]])
            #expect(try await lotAndAmount(release.transaction.seq) == [[bonusLot, -2], [paidLot, -4]])
            let given = try await draws(release.transaction.seq)
            #expect(given.map { $0["category"] as? String } == ["bonus", "paid"])
            #expect(given.map { Int64($0["source_seq"] as? Int ?? 0) } == [bonus.transaction.seq, purchase.transaction.seq])
        }
    }

    @Test("a player's store notifications are listed newest first, a page at a time; others' and uncredited ones are not", arguments: TestBackend.all)
    func notifications(backend: TestBackend) async throws {
        let now = Mutex(Date())
        let server = try await TestServer(backend, clock: { now.withLock { $0 } })
        _ = try await Self.purchaseSpendRefund(server)
        try await server.credit("p2", transactionID: "T-p2")
        func notify(_ uuid: String, _ type: String, _ transactionID: String, _ effect: StoreNotification.Effect) async throws {
            now.withLock { $0 = $0.addingTimeInterval(60) }
            _ = try await server.store.recordNotification(
                StoreNotification(notificationUUID: uuid, store: "apple", type: type, subtype: "NONE", storeTransactionID: transactionID, effect: effect, actor: "apple"))
        }
        try await notify("n-consumption", "CONSUMPTION_REQUEST", "T1", .consumptionRequest)
        try await notify("n-refund", "REFUND", "T1", .refund(shareMillipercent: 100_000, policy: .debt))
        try await notify("n-other-player", "REFUND", "T-p2", .refund(shareMillipercent: 50_000, policy: .debt))
        try await notify("n-never-credited", "REFUND", "T-unknown", .refund(shareMillipercent: 100_000, policy: .debt))
        try await notify("n-reversal", "REFUND_REVERSED", "T1", .refundReversal)
        try await server.test { client in
            let all = try await client.execute(uri: "/v1/wallets/p1/notifications", method: .get, headers: server.bearer(.support))
            #expect(all.status == .ok)
            let listed = try #require(try all.object()["notifications"] as? [[String: Any]])
            #expect(listed.map { $0["notification_uuid"] as? String } == ["n-reversal", "n-refund", "n-consumption"])
            #expect(listed.map { $0["outcome"] as? String } == ["refund_reversed", "already_applied", "consumption_recorded"])
            #expect(listed[0]["ledger_seq"] as? Int != nil && listed[0]["type"] as? String == "REFUND_REVERSED" && listed[0]["subtype"] as? String == "NONE")
            #expect(listed[2]["spent_share_millipercent"] as? Int == 100_000)
            #expect(try all.object()["next"] == nil)

            var seen: [String] = []
            var before: String?
            for _ in 0..<4 {
                let query = before.map { "&before=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" } ?? ""
                let page = try await client.execute(uri: "/v1/wallets/p1/notifications?limit=1\(query)", method: .get, headers: server.bearer(.auditor))
                #expect(page.status == .ok)
                seen += (try page.object()["notifications"] as? [[String: Any]] ?? []).compactMap { $0["notification_uuid"] as? String }
                before = try page.object()["next"] as? String
                if before == nil { break }
            }
            #expect(seen == ["n-reversal", "n-refund", "n-consumption"])

            for (query, field) in [("limit=0", "limit"), ("limit=501", "limit"), ("before=yesterday", "before"), ("before=2026-01-01T00:00:00.000Z", "before")] {
                let bad = try await client.execute(uri: "/v1/wallets/p1/notifications?\(query)", method: .get, headers: server.bearer(.support))
                #expect(bad.status == .badRequest, "\(query)")
                #expect(try JSONDecoder().decode(Problem.self, from: Data(buffer: bad.body)).errors?.first?.field == field, "\(query)")
            }
            let nobody = try await client.execute(uri: "/v1/wallets/p9/notifications", method: .get, headers: server.bearer(.auditor))
            #expect((try nobody.object()["notifications"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("a notification is listed only for the player its purchase was credited to; look-alike players and cursors are refused", arguments: TestBackend.all)
    func notificationsNeverLeak(backend: TestBackend) async throws {
        let server = try await TestServer(backend)
        try await server.credit("p1", transactionID: "T1")
        // The same store transaction id at another store is another purchase, credited to p2.
        _ = try await server.store.grant(
            GrantRequest(playerID: "p2", store: "google", storeTransactionID: "T1", productID: "com.example.consume5credits", actor: "test"))
        try await server.credit("P1", transactionID: "T-upper")
        _ = try await server.store.recordNotification(
            StoreNotification(
                notificationUUID: "n-google", store: "google", type: "VOIDED", subtype: nil, storeTransactionID: "T1",
                effect: .refund(shareMillipercent: 100_000, policy: .debt), actor: "google"))
        _ = try await server.store.recordNotification(
            StoreNotification(
                notificationUUID: "n-upper", store: "apple", type: "REFUND", subtype: nil, storeTransactionID: "T-upper",
                effect: .refund(shareMillipercent: 100_000, policy: .debt), actor: "apple"))
        try await server.test { client in
            func listed(_ player: String) async throws -> [String]? {
                let response = try await client.execute(uri: "/v1/wallets/\(player)/notifications", method: .get, headers: server.bearer(.support))
                #expect(response.status == .ok, "\(player)")
                return (try response.object()["notifications"] as? [[String: Any]])?.compactMap { $0["notification_uuid"] as? String }
            }
            #expect(try await listed("p1") == [])
            #expect(try await listed("p2") == ["n-google"])
            #expect(try await listed("P1") == ["n-upper"])
            #expect(try await listed("P%31") == ["n-upper"], "an escaped digit is the same id")

            let stamp = "2026-01-01T00:00:00.000Z"
            let refusals: [(path: String, field: String)] = [
                ("p1%20/notifications", "player_id"), ("%EF%BB%BFp1/notifications", "player_id"), ("p%D1%96/notifications", "player_id"),
                ("p1/notifications?limit=99999999999999999999", "limit"), ("p1/notifications?limit=1e3", "limit"),
                ("p1/notifications?limit=-1", "limit"), ("p1/notifications?limit=", "limit"),
                ("p1/notifications?before=", "before"), ("p1/notifications?before=%00", "before"),
                ("p1/notifications?before=\(stamp)%00", "before"), ("p1/notifications?before=\(stamp)%20", "before"),
                ("p1/notifications?before=\(stamp)%E2%80%8Bn", "before"),
                ("p1/notifications?before=\(stamp)\(String(repeating: "n", count: StoreNotificationRecord.uuidBytesMax + 1))", "before"),
                ("p1/notifications?before=2026-13-01T00:00:00.000Zn", "before"),
            ]
            for (path, field) in refusals {
                let refused = try await client.execute(uri: "/v1/wallets/\(path)", method: .get, headers: server.bearer(.support))
                #expect(refused.status == .badRequest, "\(path)")
                let problem = try? JSONDecoder().decode(Problem.self, from: Data(buffer: refused.body))
                #expect(problem?.code == "invalid_request" && problem?.errors?.map(\.field) == [field], "\(path)")
            }
            // Admin keys do not read wallets; a player may not read even their own notifications.
            let admin = try await client.execute(uri: "/v1/wallets/p2/notifications", method: .get, headers: server.bearer(.admin))
            #expect(try admin.status == .forbidden && admin.problemCode() == "forbidden")
            for path in ["/v1/wallets/p1/notifications", "/v1/transactions/1", "/v1/purchases/apple/T1", "/v1/outboxes"] {
                let own = try await client.execute(uri: path, method: .get, headers: [.authorization: "Bearer \(playerToken("p1"))"])
                #expect(try own.status == .forbidden && own.problemCode() == "forbidden", "\(path)")
                let expired = try await client.execute(uri: path, method: .get, headers: [.authorization: "Bearer \(playerToken("p1", expiresIn: -10))"])
                #expect(expired.status == .unauthorized, "\(path)")
            }
        }
    }

    @Test("the document's notification outcomes and queue names are Core's")
    func documentedEnums() throws {
        let data = Data(OpenAPIDocument.bytes)
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        func enumeration(_ schema: String, _ property: String) -> [String]? {
            ((schemas[schema]?["properties"] as? [String: Any])?[property] as? [String: Any])?["enum"] as? [String]
        }
        #expect(enumeration("StoreNotificationRecord", "outcome") == NotificationOutcome.Result.allCases.map(\.rawValue))
        #expect(enumeration("OutboxQueue", "name") == OutboxQueue.Name.allCases.map(\.rawValue))
        #expect(enumeration("LotDraw", "category") == LotCategory.allCases.map(\.rawValue))
    }
}
