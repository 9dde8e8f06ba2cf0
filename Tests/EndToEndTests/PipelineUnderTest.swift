import AppStore
import AppStoreSimulator
import AsyncHTTPClient
import EntitlementStore
import Foundation
import GrantTestSupport
import KafkaClient
import Logging
import NIOCore
import NIOHTTP1
import PipelineOperations
import PipelineRecords
import PostgresNIO
import SimulatedCustomers
import SimulatedDelivery
import SimulatorLifecycleRoutes
import StageRuntime
import TestSupport

/// The whole pipeline as separate processes — appstore-sim, ingest, verify, enrich, grant — on the
/// real broker and Postgres, with topics, groups and a database of its own so runs never meet.
final class PipelineUnderTest: @unchecked Sendable {
    enum Stage: String, CaseIterable { case ingest, verify, enrich, grant }

    let id = UUID().uuidString.prefix(8).lowercased()
    let bundleId = "com.example.entitlements"
    let month: Double
    var leeway: Int { Int(month / 20) }
    let database: String
    let stateDirectory: URL
    var ports: [String: Int] = [:]
    var processes: [String: ManagedProcess] = [:]
    var environments: [String: [String: String]] = [:]
    var restarts: [String: Int] = [:]
    var topics: [String: String] = [:]

    /// Ingest's settings over the defaults (e.g. `INGEST_UPLOAD_AUTH=jwt` and its key set).
    let ingestSettings: [String: String]
    /// Settings of all four stages over the defaults (e.g. OpenTelemetry's, to export traces).
    let stageSettings: [String: String]

    init(month: Double = 3600, ingest ingestSettings: [String: String] = [:], everyStage stageSettings: [String: String] = [:]) {
        self.month = month
        self.ingestSettings = ingestSettings
        self.stageSettings = stageSettings
        database = "e2e_\(id)"
        stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-\(id)")
    }

    var simURL: String { "http://127.0.0.1:\(ports["appstore-sim"]!)" }
    /// The keys enrich signs enriched records with and grant checks (`RECORD_MAC_KEYS_FILE`).
    var recordKeys: URL { stateDirectory.appendingPathComponent("record-mac.keys") }

    /// Creates the topics and the database, starts the simulator and the four stages, and waits until the consumers are ready.
    func start() async throws {
        for (name, _) in Topics.catalogue { topics[name] = "\(name).e2e-\(id)" }
        try await KafkaAdmin(configuration: TestServices.clientConfiguration("e2e-admin")).createTopics(
            Topics.catalogue.map { .init(name: topics[$0.name]!, partitions: $0.partitions) })
        try await ScratchDatabase.admin("CREATE DATABASE \(database)")
        try FileManager.default.createDirectory(at: stateDirectory, withIntermediateDirectories: true)

        let simPort = LocalHTTP.freePort()
        ports["appstore-sim"] = simPort
        environments["appstore-sim"] = ["SIM_STATE_DIR": stateDirectory.path, "HTTP_PORT": "\(simPort)", "SIM_BUNDLE_ID": bundleId]
        try await launch("appstore-sim")
        try await LocalHTTP.waitForPort(simPort)
        let root = stateDirectory.appendingPathComponent("root.pem")
        try await get("/sim/ca/root.pem").write(to: root)
        let products = stateDirectory.appendingPathComponent("products.json")
        try await get("/sim/lifecycle/products").write(to: products)
        let key = try JSONSerialization.jsonObject(with: try await get("/sim/api-key")) as! [String: Any]

        let kafka = LocalStack.groupTimings.merging([
            "KAFKA_BOOTSTRAP_SERVERS": TestServices.bootstrapServers, "KAFKA_FETCH_WAIT_MAX_MS": "25", "LOG_LEVEL": "warning",
        ]) { _, new in new }
        let apps = ["APPSTORE_APPS": "\(bundleId)::Sandbox", "APPSTORE_TRUSTED_ROOTS": root.path]
        // enrich signs what it writes; grant applies only what these keys signed.
        try "e2e \(Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString())\n"
            .write(to: recordKeys, atomically: true, encoding: .utf8)
        func stageEnvironment(_ stage: Stage, input: String?, output: String?, dlq: String?) -> [String: String] {
            var env = kafka
            env["HTTP_HOST"] = "127.0.0.1"
            env["HTTP_PORT"] = "\(LocalHTTP.freePort())"
            env["KAFKA_GROUP_ID"] = "appstore.\(stage.rawValue).e2e-\(id)"
            if let input { env["INPUT_TOPIC"] = topics[input] }
            if let output { env["OUTPUT_TOPIC"] = topics[output] }
            if let dlq { env["DLQ_TOPIC"] = topics[dlq] }
            return env
        }
        var ingest = stageEnvironment(.ingest, input: nil, output: nil, dlq: nil)
        ingest["RAW_TOPIC"] = topics[Topics.raw]
        ingest["INGEST_UPLOAD_AUTH"] = "none"  // open uploads: the simulated app is Sandbox-only
        ingest["APPSTORE_APPS"] = apps["APPSTORE_APPS"]
        ingest["APPSTORE_TRUSTED_ROOTS"] = apps["APPSTORE_TRUSTED_ROOTS"]  // the upload pre-check
        // The tests post as the app and expect 200, also from a broker slowed by the whole suite (the 503 is tested apart).
        ingest["INGEST_ACK_TIMEOUT_MS"] = TestServices.ingestAckTimeoutMilliseconds
        environments["ingest"] = ingest.merging(ingestSettings) { _, given in given }
        environments["verify"] = stageEnvironment(.verify, input: Topics.raw, output: Topics.verified, dlq: Topics.verifyDeadLetters)
            .merging(apps) { a, _ in a }
        environments["enrich"] = stageEnvironment(.enrich, input: Topics.verified, output: Topics.enriched, dlq: Topics.enrichDeadLetters)
            .merging(apps) { a, _ in a }
            .merging([
                "APPSTORE_API_CREDENTIALS": "\(bundleId):\(key["issuerId"]!):\(key["keyId"]!):\(key["privateKeyPath"]!)",
                "APPSTORE_API_BASE_URL": simURL, "APPSTORE_API_RATE_SCALE": LocalStack.value("LOCAL_APPSTORE_API_RATE_SCALE"), "RETRY_MAX_MS": "2000",
                "RECORD_MAC_KEYS_FILE": recordKeys.path,
            ]) { a, _ in a }
        environments["grant"] = stageEnvironment(.grant, input: Topics.enriched, output: Topics.entitlementChanges, dlq: Topics.grantDeadLetters)
            .merging(apps) { a, _ in a }
            .merging([
                // The app opted in to answering Apple's consumption requests.
                "CONSUMPTION_APPS": bundleId, "CONSUMPTION_POLL_MS": "500", "CONSUMPTION_REFUND_PREFERENCE": "DECLINE",
                "APPSTORE_API_CREDENTIALS": "\(bundleId):\(key["issuerId"]!):\(key["keyId"]!):\(key["privateKeyPath"]!)",
                "APPSTORE_API_BASE_URL": simURL, "APPSTORE_API_RATE_SCALE": LocalStack.value("LOCAL_APPSTORE_API_RATE_SCALE"),
            ]) { a, _ in a }
            .merging([
                "POSTGRES_HOST": ScratchDatabase.host, "POSTGRES_PORT": "\(ScratchDatabase.port)", "POSTGRES_DATABASE": database,
                "POSTGRES_TLS": "disable", "ENTITLEMENTS_PRODUCTS_FILE": products.path, "GRANT_EXPIRY_LEEWAY_S": "\(leeway)",
                "RETRY_MAX_MS": "2000", "RECORD_MAC_KEYS_FILE": recordKeys.path,
            ]) { a, _ in a }
        for stage in Stage.allCases {
            environments[stage.rawValue]!.merge(stageSettings) { _, given in given }
            ports[stage.rawValue] = Int(environments[stage.rawValue]!["HTTP_PORT"]!)
            try await launch(stage.rawValue)
        }
        for stage in Stage.allCases { try await LocalHTTP.waitForPort(ports[stage.rawValue]!, timeout: .seconds(120)) }
        for stage in [Stage.verify, .enrich, .grant] { try await waitReady(stage) }
    }

    /// Starts a pipeline, runs `body` on it, and stops it (processes and database) whatever happens.
    static func with<T>(
        ingest: [String: String] = [:], everyStage: [String: String] = [:], _ body: (PipelineUnderTest) async throws -> T
    ) async throws -> T {
        let pipeline = PipelineUnderTest(ingest: ingest, everyStage: everyStage)
        return try await withCleanup {
            try await pipeline.start()
            return try await body(pipeline)
        } cleanup: {
            await pipeline.stop()
        }
    }

    /// Starts process `name` (the executable of that name unless another is given) with its environment.
    func launch(_ name: String, executable: String? = nil) async throws {
        let round = restarts[name, default: 0]
        processes[name] = try await ManagedProcess(executable ?? name, environment: environments[name]!, logName: "e2e-\(id)-\(name)-\(round)")
    }

    /// SIGKILL, as when a machine dies, then start again with the same settings.
    func crashAndRestart(_ stage: Stage) async throws {
        await processes[stage.rawValue]?.kill9()
        restarts[stage.rawValue, default: 0] += 1
        try await launch(stage.rawValue)
        try await LocalHTTP.waitForPort(ports[stage.rawValue]!, timeout: .seconds(120))
    }

    func waitReady(_ stage: Stage, timeout: Duration = .seconds(90)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if (try? await status("http://127.0.0.1:\(ports[stage.rawValue]!)/ready")) == 200 { return }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw TestSupportError("\(stage) is not ready after \(timeout)")
    }

    /// Stops every process (SIGTERM) and drops the database.
    func stop() async {
        for (_, process) in processes where process.isRunning { await process.terminate() }
        try? await ScratchDatabase.admin("DROP DATABASE IF EXISTS \(database) WITH (FORCE)")
        try? FileManager.default.removeItem(at: stateDirectory)
    }

    // MARK: Playing and waiting

    func play(_ request: LifecycleRunRequest) async throws {
        var request = request
        request.webhook = "http://127.0.0.1:\(ports["ingest"]!)"
        request.bundleId = bundleId
        request.monthSeconds = month
        let code = try await post("/sim/lifecycle", json: request)
        guard code == 202 else { throw TestSupportError("POST /sim/lifecycle answered \(code)") }
    }

    func lifecycle() async throws -> LifecycleRunStatus {
        try AppStoreJSON.decoder.decode(LifecycleRunStatus.self, from: try await get("/sim/lifecycle"))
    }

    /// The sum of a metric over its labels on a stage's `/metrics` (0 when the stage is down).
    func metric(_ stage: Stage, _ name: String, labelContains: String? = nil) async -> Double {
        guard let data = try? await get("http://127.0.0.1:\(ports[stage.rawValue]!)/metrics", absolute: true) else { return 0 }
        var sum = 0.0
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name) {
            let rest = line.dropFirst(name.count)
            guard rest.first == " " || rest.first == "{" else { continue }
            if let labelContains, !line.contains(labelContains) { continue }
            sum += Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return sum
    }

    /// Waits until the simulator has delivered everything and the database holds every notification
    /// and upload the webhook acknowledged (``unrecorded(_:)`` is empty).
    func waitUntilDrained(timeout: Duration) async throws -> LifecycleRunStatus {
        let deadline = ContinuousClock.now + timeout
        var missing: [String] = []
        while ContinuousClock.now < deadline {
            let run = try await lifecycle()
            if run.state == "failed" { throw TestSupportError("the lifecycle run failed: \(run.error ?? "")") }
            if run.state == "done", let report = run.report {
                missing = try await unrecorded(report)
                if missing.isEmpty { return run }
            }
            try await Task.sleep(for: .seconds(1))
        }
        throw TestSupportError("the pipeline did not drain within \(timeout); not recorded: \(missing.count), e.g. \(missing.prefix(3))")
    }

    /// What the webhook acknowledged that grant never recorded: each delivered notification by its
    /// UUID, each upload by its transaction. The lost events, once the pipeline drained. Compared as
    /// sets, not counts: an attempt whose answer a killed stage never sent may be recorded as well.
    func unrecorded(_ report: PlaybackReport) async throws -> [String] {
        let (uuids, uploads) = try await withDatabase { client in
            var uuids: Set<String> = []
            var uploads: Set<String> = []
            let rows = try await client.query(
                """
                SELECT source, coalesce(notification_uuid, ''), coalesce(transaction_id, ''), coalesce(original_transaction_id, '')
                FROM notifications WHERE source <> 'refund-history'
                """, logger: ScratchDatabase.logger)
            for try await (source, uuid, transaction, original) in rows.decode((String, String, String, String).self) {
                // An upload names its purchase; what grant records is the transaction Apple signed for it.
                if source == "app-upload" || source == "app-receipt" {
                    uploads.formUnion([transaction, original])
                } else {
                    uuids.insert(uuid.lowercased())
                }
            }
            return (uuids, uploads)
        }
        return report.deliveredNotificationUUIDs.filter { !uuids.contains($0.lowercased()) }.map { "notification \($0)" }
            + report.uploadedTransactionIds.filter { !uploads.contains($0) }.map { "upload of \($0)" }
    }

    // MARK: The database

    func withDatabase<T: Sendable>(_ body: @Sendable (PostgresClient) async throws -> T) async throws -> T {
        try await ScratchDatabase.configuration(database: database).withTemporaryClient(logger: ScratchDatabase.logger, body)
    }

    /// Every row of every table grant writes, as sorted text: equal dumps mean an unchanged database.
    func dump() async throws -> [String: String] {
        try await withDatabase { client in
            var out: [String: String] = [:]
            for (table, columns) in ScratchDatabase.allTables {
                let sql = "SELECT coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '') FROM (SELECT \(columns) FROM \(table)) AS t"
                for try await text in try await client.query(PostgresQuery(unsafeSQL: sql), logger: ScratchDatabase.logger).decode(String.self) {
                    out[table] = text
                }
            }
            return out
        }
    }

    /// Stops grant (SIGTERM), resets its consumer group to the beginning of its input, starts it
    /// again and waits until it has processed at least as many records as before.
    func replayGrant() async throws {
        let processed = await metric(.grant, "pipeline_messages_processed_total")
        await processes["grant"]?.terminate()
        let env = environments["grant"]!
        let stage = PipelineStageInfo(
            name: "grant", groupID: env["KAFKA_GROUP_ID"]!, inputTopic: env["INPUT_TOPIC"]!, outputTopic: nil,
            deadLetterTopic: env["DLQ_TOPIC"]!)
        let replay = StageReplay(offsets: KafkaGroupOffsets(configuration: TestServices.clientConfiguration("e2e-replay")))
        let plan = try await replay.plan(stage: stage, from: .earliest)
        guard plan.recordsToReprocess >= Int64(processed) else {
            throw TestSupportError("the replay would reprocess \(plan.recordsToReprocess) records, fewer than the \(processed) processed")
        }
        try await replay.apply(plan)
        restarts["grant", default: 0] += 1
        try await launch("grant")
        try await LocalHTTP.waitForPort(ports["grant"]!, timeout: .seconds(120))
        let deadline = ContinuousClock.now + .seconds(300)
        while await metric(.grant, "pipeline_messages_processed_total") < processed {
            guard ContinuousClock.now < deadline else { throw TestSupportError("grant did not replay its input within 300 s") }
            try await Task.sleep(for: .milliseconds(500))
        }
        try await Task.sleep(for: .seconds(2))
    }

    /// Waits until grant's consumption responder left no request pending, then returns each
    /// request's transaction and status, and the transactions the simulated Apple received answers for.
    func consumptionAnswers(timeout: Duration) async throws -> (requests: [String: String], answered: [String]) {
        let deadline = ContinuousClock.now + timeout
        while true {
            let requests = try await withDatabase { client in
                var rows: [String: String] = [:]
                let query = try await client.query(
                    "SELECT coalesce(transaction_id, notification_uuid), status FROM consumption_requests", logger: ScratchDatabase.logger)
                for try await (id, status) in query.decode((String, String).self) { rows[id] = status }
                return rows
            }
            if !requests.values.contains("pending") || ContinuousClock.now > deadline {
                let received = try JSONDecoder().decode([Received].self, from: try await get("/sim/consumption"))
                return (requests, received.map(\.transactionId).sorted())
            }
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    private struct Received: Decodable { var transactionId: String }

    /// Distinct events grant recorded: notifications by UUID, uploads by transaction (with
    /// `sweep`, only what the refund sweep fed; without, everything else).
    func loggedEvents(sweep: Bool = false) async throws -> Int {
        try await withDatabase { client in
            var count = 0
            let query: PostgresQuery =
                sweep
                ? "SELECT count(*)::int FROM notifications WHERE source = 'refund-history'"
                : "SELECT count(*)::int FROM notifications WHERE source <> 'refund-history'"
            for try await n in try await client.query(query, logger: ScratchDatabase.logger).decode(Int.self) {
                count = n
            }
            return count
        }
    }

    /// Change events grant committed and has not published yet (its outbox, external purchase tokens included).
    func unpublishedChanges() async throws -> Int {
        try await withDatabase { client in
            var count = 0
            let query: PostgresQuery = """
                SELECT ((SELECT count(*) FROM outbox) + (SELECT count(*) FROM external_purchase_tokens WHERE published_at IS NULL))::int
                """
            for try await n in try await client.query(query, logger: ScratchDatabase.logger).decode(Int.self) { count = n }
            return count
        }
    }

    /// Runs the refund sweep (`appstorectl refunds`: the refunds whose notification Apple never
    /// delivered, as in `refund-never-delivered`) and waits until grant recorded each refund it fed.
    /// - Returns: How many refunds it fed.
    /// - Returns: How many refunds it fed, and the customers it fed them for.
    func sweepRefunds(timeout: Duration) async throws -> (fed: Int, customers: Set<String>) {
        struct Output: Decodable {
            struct Item: Decodable {
                struct Customer: Decodable { var customerId: String }
                var customer: Customer
                var fed: [String]
            }
            var fed: Int
            var items: [Item]
        }
        let result = try await appstorectl(["refunds", "--app", bundleId, "--json"])
        guard result.status == 0, let line = result.output.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
            throw TestSupportError("appstorectl refunds failed (\(result.status))")
        }
        let output = try JSONDecoder().decode(Output.self, from: Data(line.utf8))
        let fed = output.fed
        let deadline = ContinuousClock.now + timeout
        while try await loggedEvents(sweep: true) < fed {
            guard ContinuousClock.now < deadline else { throw TestSupportError("grant did not record the \(fed) swept refunds within \(timeout)") }
            try await Task.sleep(for: .seconds(1))
        }
        return (fed, Set(output.items.filter { !$0.fed.isEmpty }.map { $0.customer.customerId.lowercased() }))
    }

    /// Checks the refund sweep against the run: every customer whose `REFUND` never reached the
    /// webhook was fed. A delivered refund still on its way through the stages when the sweep read
    /// grant's rows may be fed too: a repeat grant drops, so it is printed, not a fault; the ground
    /// truth comparison after the sweep decides whether anything is wrong.
    func sweepProblems(_ swept: (fed: Int, customers: Set<String>), _ run: LifecycleRunStatus) -> [String] {
        let neverDelivered = Set(
            run.customers.filter { $0.scenario == LifecycleScenario.refundNeverDelivered.rawValue }.map { $0.customer.uuidString.lowercased() })
        let extra = swept.customers.subtracting(neverDelivered)
        if !extra.isEmpty {
            let scenarios = run.customers.filter { extra.contains($0.customer.uuidString.lowercased()) }.map(\.scenario)
            print("refund sweep: also fed \(extra.count) refund(s) still on their way when it read grant's rows (\(scenarios))")
        }
        var problems: [String] = []
        if neverDelivered.isEmpty { problems.append("the run had no refund-never-delivered customer") }
        let missed = neverDelivered.subtracting(swept.customers)
        if !missed.isEmpty { problems.append("the sweep missed \(missed.count) never-delivered refund(s): \(missed.sorted().prefix(5))") }
        return problems
    }

    /// Customer → entitlement → active-until in milliseconds (`nil`: forever); consumables as `units:<key>`.
    func entitlements() async throws -> [String: [String: Int64?]] {
        try await withDatabase { client in
            var result: [String: [String: Int64?]] = [:]
            let rows = try await client.query(
                """
                SELECT customer_id::text, entitlement_key, (extract(epoch from active_until) * 1000)::bigint
                FROM current_entitlements WHERE environment = 'Sandbox'
                UNION ALL
                SELECT customer_id::text, 'units:' || entitlement_key, quantity FROM consumable_balances WHERE environment = 'Sandbox'
                """, logger: ScratchDatabase.logger)
            for try await (customer, key, value) in rows.decode((String, String, Int64?).self) {
                result[customer.lowercased(), default: [:]][key] = value
            }
            return result
        }
    }

    /// Every customer whose entitlements in Postgres differ from the simulator's ground truth, with
    /// both sides; empty when all match. Leeway is added where Apple expects a renewal.
    func mismatches(_ run: LifecycleRunStatus) async throws -> [String] {
        let database = try await entitlements()
        let catalogue = SimulationCatalog.standard(bundleId: bundleId)
        var problems: [String] = []
        for customer in run.customers {
            var expected: [String: Int64?] = [:]
            for e in customer.entitlements {
                let until = e.until.map { AppStoreJSON.milliseconds(since1970: $0) + (e.renewalExpected ? Int64(leeway) * 1000 : 0) }
                expected[e.entitlement] = until
            }
            for (product, units) in customer.consumables {
                let key = "units:" + catalogue.product(product).entitlement
                expected[key] = .some(((expected[key] ?? 0) ?? 0) + Int64(units))
            }
            let have = database[customer.customer.uuidString.lowercased()] ?? [:]
            let same =
                Set(expected.keys) == Set(have.keys)
                && expected.allSatisfy { key, value in
                    switch (value, have[key] ?? nil) {
                    case (nil, nil): true
                    case (let a?, let b?): key.hasPrefix("units:") ? a == b : abs(a - b) <= 1000
                    default: false
                    }
                }
            if !same { problems.append("\(customer.customer) \(customer.scenario): expected \(expected), Postgres \(have)") }
        }
        // A parent's RESCIND_CONSENT reaches the change stream for exactly the customers it names.
        let told = try await withDatabase { client in
            var customers: Set<String> = []
            let rows = try await client.query(
                "SELECT DISTINCT customer_id::text FROM entitlement_changes WHERE change = 'consent_rescinded'", logger: ScratchDatabase.logger)
            for try await id in rows.decode(String.self) { customers.insert(id.lowercased()) }
            return customers
        }
        let rescinded = Set(
            run.customers.filter { $0.scenario == LifecycleScenario.consentRescinded.rawValue }.map { $0.customer.uuidString.lowercased() })
        for customer in rescinded.symmetricDifference(told).sorted() {
            problems.append("\(customer): consent_rescinded \(rescinded.contains(customer) ? "missing from" : "wrongly on") its change stream")
        }
        return problems
    }

    // MARK: The operator tool

    /// The pipeline's settings as an operator's shell has them: enrich's API and broker variables,
    /// grant's database, and the run's own topic and group names.
    var operatorEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in environments["enrich"] ?? [:] where name.hasPrefix("APPSTORE_") || name.hasPrefix("KAFKA_") {
            environment[name] = value
        }
        for (name, value) in environments["grant"] ?? [:] where name.hasPrefix("POSTGRES_") { environment[name] = value }
        environment["RAW_TOPIC"] = topics[Topics.raw]
        environment["VERIFIED_TOPIC"] = topics[Topics.verified]
        environment["ENRICHED_TOPIC"] = topics[Topics.enriched]
        for (stage, dlq) in [("verify", Topics.verifyDeadLetters), ("enrich", Topics.enrichDeadLetters), ("grant", Topics.grantDeadLetters)] {
            environment["\(stage.uppercased())_DLQ_TOPIC"] = topics[dlq]
            environment["\(stage.uppercased())_GROUP_ID"] = environments[stage]?["KAFKA_GROUP_ID"]
        }
        return environment
    }

    /// Runs the built `appstorectl` with ``operatorEnvironment``; prints the command and its output.
    func appstorectl(_ arguments: [String], timeout: Duration = .seconds(600)) async throws -> CommandResult {
        let result = try await BuiltProducts.run("appstorectl", arguments, environment: operatorEnvironment, timeout: timeout)
        print("$ appstorectl \(arguments.joined(separator: " ")) → \(result.status)\n\(result.output)")
        return result
    }

    // MARK: HTTP

    func get(_ path: String, absolute: Bool = false) async throws -> Data {
        let response = try await LocalHTTP.client.execute(HTTPClientRequest(url: absolute ? path : simURL + path), timeout: LocalHTTP.patience)
        let body = try await response.body.collect(upTo: 64 << 20)
        guard response.status.code == 200 else { throw TestSupportError("GET \(path) answered \(response.status.code)") }
        return Data(body.readableBytesView)
    }

    func status(_ url: String) async throws -> Int {
        let response = try await LocalHTTP.client.execute(HTTPClientRequest(url: url), timeout: .seconds(5))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    @discardableResult
    func post(_ path: String, json: some Encodable, method: NIOHTTP1.HTTPMethod = .POST) async throws -> Int {
        var request = HTTPClientRequest(url: simURL + path)
        request.method = method
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: Array(try AppStoreJSON.encoder.encode(json))))
        let response = try await LocalHTTP.client.execute(request, timeout: LocalHTTP.patience)
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }
}
