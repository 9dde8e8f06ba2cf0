import EntitlementStore
import EnvironmentSettings
import Foundation
import GrantDecision
import GrantService
import Logging
import PostgresNIO
import StageRuntime
import Testing

@Suite("grant configuration")
struct GrantConfigurationTests {
    private func problem(_ values: [String: String]) -> String? {
        do {
            _ = try GrantConfiguration(environment: EnvironmentReader(values))
            return nil
        } catch {
            return error.description
        }
    }

    @Test("defaults: refuse transfers, one hour of leeway, rescinded consent only told, migrate on start")
    func defaults() throws {
        let c = try GrantConfiguration(environment: EnvironmentReader([:]))
        #expect(c.policy.transferPolicy == .refuse)
        #expect(c.policy.expiryLeeway == 3600)
        #expect(c.policy.rescindedConsent == .notify, "a rescinded consent changes no access unless asked")
        #expect(try GrantConfiguration(environment: EnvironmentReader(["GRANT_RESCINDED_CONSENT": "suspend"])).policy.rescindedConsent == .suspend)
        #expect(c.store.migrate)
        #expect(c.store.database == "entitlements" && c.store.port == 5432)
    }

    @Test("every variable is validated with a message naming it")
    func validation() throws {
        #expect(problem(["GRANT_TRANSFER_POLICY": "sometimes"])?.contains("GRANT_TRANSFER_POLICY") == true)
        #expect(problem(["GRANT_RESCINDED_CONSENT": "revoke"])?.contains("GRANT_RESCINDED_CONSENT") == true)
        #expect(problem(["GRANT_EXPIRY_LEEWAY_S": "-5"])?.contains("GRANT_EXPIRY_LEEWAY_S") == true)
        #expect(problem(["POSTGRES_PORT": "http"])?.contains("POSTGRES_PORT") == true)
        #expect(problem(["POSTGRES_MIGRATE": "maybe"])?.contains("POSTGRES_MIGRATE") == true)
        #expect(problem(["POSTGRES_PASSWORD_FILE": "/nonexistent/pw"])?.contains("POSTGRES_PASSWORD_FILE") == true)
        #expect(problem(["ENTITLEMENTS_PRODUCTS_FILE": "/nonexistent/p.json"])?.contains("ENTITLEMENTS_PRODUCTS_FILE") == true)
        #expect(problem(["POSTGRES_MIGRATIONS_DIR": "/nonexistent/dir"])?.contains("POSTGRES_MIGRATIONS_DIR") == true)
    }

    @Test("the password comes from the file, and never shows in the description")
    func passwordFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pw-\(UUID().uuidString)").path
        try "s3cret-value\n".write(toFile: path, atomically: true, encoding: .utf8)
        let c = try GrantConfiguration(environment: EnvironmentReader(["POSTGRES_PASSWORD_FILE": path, "POSTGRES_PASSWORD": "other"]))
        #expect(c.store.password == "s3cret-value")
        #expect(!c.store.description.contains("s3cret"))
    }

    @Test("the password variable is read as given and shows in neither the description nor --help")
    func passwordNeverShown() throws {
        let password = " pw-\(UUID().uuidString.prefix(8)) "
        let c = try GrantConfiguration(environment: EnvironmentReader(["POSTGRES_PASSWORD": password]))
        #expect(c.store.password == password)
        #expect(!c.store.description.contains(password.trimmingCharacters(in: .whitespaces)))
        let variables = GrantConfiguration.variables
        #expect(variables.first { $0.name == "POSTGRES_PASSWORD" }?.isSecret == true)
        let usage = ProcessBootstrap.usage(name: "grant", summary: "grants", variables: variables)
        #expect(!usage.contains(password.trimmingCharacters(in: .whitespaces)))
    }

    @Test("--help shows every grant and store variable with the default an empty environment reads")
    func helpShowsDefaults() throws {
        let usage = ProcessBootstrap.usage(name: "grant", summary: "grants", variables: GrantConfiguration.variables)
        for variable in GrantConfiguration.variables {
            #expect(usage.contains("  \(variable.name) "), "\(variable.name) is missing")
        }
        let c = try GrantConfiguration(environment: EnvironmentReader([:]))
        let shown = Dictionary(uniqueKeysWithValues: GrantConfiguration.variables.map { ($0.name, $0.defaultText) })
        #expect(shown["POSTGRES_PORT"] == "\(c.store.port)" && shown["POSTGRES_DATABASE"] == c.store.database)
        #expect(shown["POSTGRES_TLS"] == c.store.tls.rawValue && shown["POSTGRES_MAX_CONNECTIONS"] == "\(c.store.maximumConnections)")
        #expect(shown["GRANT_TRANSFER_POLICY"] == c.policy.transferPolicy.rawValue)
        #expect(shown["GRANT_EXPIRY_LEEWAY_S"] == "\(Int(c.policy.expiryLeeway))")
        #expect(shown["OUTBOX_POLL_MS"] == "500" && c.outboxPollInterval == .milliseconds(500))
        #expect(shown["OUTBOX_BATCH_SIZE"] == "\(c.outboxBatchSize)")
        #expect(shown["GRANT_CONCURRENT_TRANSACTIONS"] == "\(c.concurrentTransactions)")
    }

    @Test("the product mapping file: long and short forms, bad files refused")
    func productsFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("products-\(UUID().uuidString).json").path
        try #"{"products": {"premium.monthly": {"entitlements": ["premium"]}, "season": {"entitlements": ["season"], "durationDays": 90}}}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        let c = try GrantConfiguration(environment: EnvironmentReader(["ENTITLEMENTS_PRODUCTS_FILE": path]))
        #expect(c.policy.catalog.entitlements(for: "premium.monthly") == ["premium"])
        #expect(c.policy.catalog.durationDays(for: "season") == 90)
        #expect(c.policy.catalog.entitlements(for: "not.mapped") == ["not.mapped"])
        #expect(try ProductCatalog.parse(Data(#"{"a": ["x", "y"]}"#.utf8)).entitlements(for: "a") == ["x", "y"])
        #expect(throws: ProductCatalogError.self) { try ProductCatalog.parse(Data(#"{"a": []}"#.utf8)) }
        #expect(throws: ProductCatalogError.self) { try ProductCatalog.parse(Data(#"{"a": {"entitlements": ["x"], "durationDays": 0}}"#.utf8)) }
        try "[1,2]".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(problem(["ENTITLEMENTS_PRODUCTS_FILE": path])?.contains("ENTITLEMENTS_PRODUCTS_FILE") == true)
    }
}

@Suite("store error classification")
struct StoreErrorTests {
    @Test("an unreachable Postgres is transient, not a reason to dead-letter")
    func unreachableIsTransient() async throws {
        // Nothing listens on port 1: the pool's connection attempts fail.
        let config = StoreConfiguration(host: "127.0.0.1", port: 1, password: nil, database: "x", tls: .disable)
        var options = config.clientConfiguration()
        options.options.connectTimeout = .milliseconds(200)
        let client = PostgresClient(configuration: options, backgroundLogger: Logger(label: "t"))
        let classified: StoreError? = await withTaskGroup(of: StoreError?.self) { group in
            group.addTask {
                await client.run()
                return StoreError?.none
            }
            defer { group.cancelAll() }
            do {
                try await client.query("SELECT 1")
                return nil
            } catch {
                return StoreError.classify(error)
            }
        }
        let error = try #require(classified)
        #expect(error.isTransient, "\(error)")
    }
}
