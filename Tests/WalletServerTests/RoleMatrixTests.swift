import Foundation
import Testing
import WalletCore
import WalletTestSupport
@testable import WalletServer

@Suite("The role matrix", .throttled)
struct RoleMatrixTests {
    @Test("every route that takes credentials is in exactly one row of the role matrix, with exactly its access")
    func matrixIsTheRoutes() async throws {
        // SQLite only: the routes and their access rules are the same whatever the store.
        let server = try await TestServer(.sqlite)
        let routes = server.routes.routes.filter { !$0.access.isOpen }
        var listed: [String: RoleDuty] = [:]
        for duty in RoleMatrix.duties {
            for route in duty.routes {
                #expect(listed[route] == nil, "\(route) is in two rows")
                listed[route] = duty
            }
        }
        for route in routes {
            let name = "\(route.method.rawValue) \(route.path)"
            guard let duty = listed.removeValue(forKey: name) else {
                Issue.record("\(name) is in no row of RoleMatrix.duties")
                continue
            }
            #expect(route.access.roles == duty.roles, "\(name): the route admits \(route.access.roles), the matrix says \(duty.roles)")
            #expect(route.access.playerOwnWallet == duty.player, "\(name): players \(route.access.playerOwnWallet ? "may" : "may not") call it")
        }
        #expect(listed.isEmpty, "rows name routes that do not exist: \(listed.keys.sorted())")
    }

    @Test("the help text and the README table say what each role may do")
    func rendered() {
        #expect(RoleMatrix.rolesText.contains("auditor: read a wallet: balances, history, lots, holds, entitlements; a wallet's statement for a period;"))
        #expect(!RoleMatrix.rolesText.contains("admin: read a wallet"), "admin keys do not read wallets")
        let rows = RoleMatrix.markdownTable.split(separator: "\n")
        #expect(rows.count == RoleMatrix.duties.count + 2)
        #expect(rows.first == "| what | admin | service | support | auditor | player (own wallet) |")
        // The README's security model shows the same table, row for row.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = (try? String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
        let readmeRows = readme.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let start = readmeRows.firstIndex(of: String(rows[0]))
        #expect(start.map { Array(readmeRows[$0..<min($0 + rows.count, readmeRows.count)]) } == rows.map(String.init), "README.md's role table differs from RoleMatrix.markdownTable:\n\(RoleMatrix.markdownTable)")
    }
}
