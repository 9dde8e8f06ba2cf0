import AppStore
import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import SimulatedCustomers
import SimulatedDelivery
import Synchronization

/// `POST /sim/lifecycle`: how many customers to play, on which clock, to which webhook, with which
/// delivery disorder.
public struct LifecycleRunRequest: Codable, Sendable, Hashable {
    public var customers: Int
    public var seed: UInt64?
    /// Seconds one simulated month lasts (Apple's sandbox: five minutes).
    public var monthSeconds: Double?
    /// Base URL of the webhook (ingest or the gateway); `/v2/notifications` and `/v1/transactions` are appended.
    public var webhook: String
    public var bundleId: String?
    public var duplicateRate: Double?
    public var maxDelayMs: Int?
    public var reorderWindow: Int?
    public var dropRate: Double?
    /// Retry failed deliveries on Apple's production schedule (scaled to the clock).
    public var retries: Bool?
    public var stepsPerSecond: Double?
    public var concurrency: Int?
    /// The first customer's index (default 0): transaction IDs follow from it, so runs into one
    /// simulator or database keep their purchases apart by starting at different indexes.
    public var firstCustomerIndex: Int?

    public init(customers: Int, webhook: String) {
        self.customers = customers
        self.webhook = webhook
    }
}

/// `POST /sim/lifecycle/prepare`: customers whose lifecycles the simulator applies and signs at
/// once, answering the requests it would have sent for a load generator to post.
public struct LifecyclePrepareRequest: Codable, Sendable, Hashable {
    public var customers: Int
    public var seed: UInt64?
    public var monthSeconds: Double?
    public var bundleId: String?
    public var firstCustomerIndex: Int?

    public init(customers: Int) {
        self.customers = customers
    }
}

/// What `GET /sim/lifecycle` answers: the run's progress and, per customer, the ground truth (a customer
/// whose token Apple re-assigned is listed too, as scenario `… (former)`, with nothing).
public struct LifecycleRunStatus: Codable, Sendable {
    public struct Customer: Codable, Sendable {
        public var customer: UUID
        public var scenario: String
        public var entitlements: [ExpectedEntitlement]
        public var consumables: [String: Int]
    }

    public var state: String
    public var horizon: Date?
    public var report: PlaybackReport?
    public var error: String?
    public var customers: [Customer]
}

/// One lifecycle playback at a time inside the simulator, run in the background.
public final class LifecycleRuns: Sendable {
    private let apple: SimulatedApple
    /// The app a run plays unless its request names another.
    public let defaultBundleId: String
    /// Delivers to the webhook: the shared client, or one that also trusts a gateway's own
    /// certificate (`SIM_WEBHOOK_CA_FILE`).
    private let client: HTTPClient
    private let state = Mutex(LifecycleRunStatus(state: "idle", customers: []))
    /// Each customer's subscriptions (original transaction IDs), to carry extensions into the ground truth.
    private let subscriptions = Mutex<[UUID: Set<String>]>([:])

    public init(apple: SimulatedApple, defaultBundleId: String, client: HTTPClient = .shared) {
        self.apple = apple
        self.defaultBundleId = defaultBundleId
        self.client = client
    }

    /// The run and its ground truth, with every extension the simulator applied since (a mass
    /// extension, an operator's single one): an entitlement that ended when an extended period ended
    /// now ends when the extended one does.
    public var status: LifecycleRunStatus {
        var current = state.withLock { $0 }
        let applied = apple.store.appliedExtensions
        guard !applied.isEmpty else { return current }
        let subscriptions = self.subscriptions.withLock { $0 }
        for c in current.customers.indices {
            guard let owned = subscriptions[current.customers[c].customer] else { continue }
            for extended in applied where owned.contains(extended.originalTransactionId) {
                for e in current.customers[c].entitlements.indices {
                    guard let until = current.customers[c].entitlements[e].until,
                        abs(until.timeIntervalSince(extended.previousExpiry)) < 0.001
                    else { continue }
                    current.customers[c].entitlements[e].until = extended.newExpiry
                }
            }
        }
        return current
    }

    /// Generates the customers (their lifecycles end now) and starts playing them.
    /// - Throws: ``SimulatorInputError`` when a run is in progress or the request is out of bounds.
    public func start(_ request: LifecycleRunRequest) throws -> LifecycleRunStatus {
        let bundleId = request.bundleId ?? defaultBundleId
        let (simulation, customers) = try Self.customers(
            request.customers, month: request.monthSeconds, seed: request.seed, firstIndex: request.firstCustomerIndex, bundleId: bundleId)
        var options = DeliveryOptions()
        options.duplicateRate = request.duplicateRate ?? 0
        options.maxDelay = .milliseconds(Int64(request.maxDelayMs ?? 0))
        options.reorderWindow = request.reorderWindow ?? 1
        options.dropRate = request.dropRate ?? 0
        options.retryDelays = request.retries == false ? [] : DeliveryOptions.retrySchedule(month: simulation.month)
        options.stepsPerSecond = request.stepsPerSecond
        options.concurrency = request.concurrency ?? 32
        let started = try claim("running", simulation: simulation, customers: customers)
        let player = LifecyclePlayer(
            records: SimulatorLifecycleRecords(apple: apple, bundleId: bundleId), webhook: request.webhook, options: options,
            seed: (request.seed ?? 1) &+ 1, client: client)
        Task {
            do {
                let report = try await player.play(customers)
                state.withLock {
                    $0.state = "done"
                    $0.report = report
                }
            } catch {
                state.withLock {
                    $0.state = "failed"
                    $0.error = "\(error)"
                }
            }
        }
        return started
    }

    /// Generates the customers, applies every step of their lifecycles to the simulator and signs
    /// what each causes, and returns the requests the player would have sent, in its order (see
    /// ``LifecyclePlayer/prepare(_:)``). The status then says `prepared`, with the ground truth.
    /// - Throws: ``SimulatorInputError`` when a run is in progress or the request is out of bounds.
    public func prepare(_ request: LifecyclePrepareRequest) async throws -> [LifecyclePlayer.PreparedRequest] {
        let bundleId = request.bundleId ?? defaultBundleId
        let (simulation, customers) = try Self.customers(
            request.customers, month: request.monthSeconds, seed: request.seed, firstIndex: request.firstCustomerIndex, bundleId: bundleId)
        _ = try claim("preparing", simulation: simulation, customers: customers)
        let player = LifecyclePlayer(
            records: SimulatorLifecycleRecords(apple: apple, bundleId: bundleId), webhook: "", options: DeliveryOptions(),
            seed: request.seed ?? 1, client: client)
        do {
            let requests = try await player.prepare(customers)
            state.withLock {
                $0.state = "prepared"
                $0.report = player.progress
            }
            return requests
        } catch {
            state.withLock {
                $0.state = "failed"
                $0.error = "\(error)"
            }
            throw error
        }
    }

    /// The request's customers, its bounds checked.
    static func customers(
        _ count: Int, month: Double?, seed: UInt64?, firstIndex: Int?, bundleId: String
    ) throws(SimulatorInputError) -> (LifecycleSimulation, [SimulatedCustomer]) {
        guard (1...100_000).contains(count) else { throw SimulatorInputError("customers must be 1…100000") }
        let month = month ?? 300
        guard month >= 1 else { throw SimulatorInputError("monthSeconds must be at least 1") }
        let first = firstIndex ?? 0
        // Transaction IDs are 7 followed by 15 digits of index × 1,000 + sequence.
        guard first >= 0, first + count <= 999_000_000 else {
            throw SimulatorInputError("firstCustomerIndex must be 0 or more, and with customers at most 999000000")
        }
        let simulation = LifecycleSimulation(catalog: .standard(bundleId: bundleId), month: month, horizon: Date(), seed: seed ?? 1)
        return (simulation, simulation.customers(count, firstIndex: first))
    }

    /// Marks a run or a preparation as started, unless another is under way.
    private func claim(
        _ name: String, simulation: LifecycleSimulation, customers: [SimulatedCustomer]
    ) throws(SimulatorInputError) -> LifecycleRunStatus {
        try state.withLock { current throws(SimulatorInputError) -> LifecycleRunStatus in
            guard current.state != "running", current.state != "preparing" else { throw SimulatorInputError("a lifecycle run is in progress") }
            subscriptions.withLock { owned in
                owned = [:]
                for c in customers {
                    owned[c.customer, default: []].formUnion(
                        c.transactions.lazy.filter { $0.type == .autoRenewableSubscription }.compactMap(\.originalTransactionId))
                }
            }
            current = LifecycleRunStatus(
                state: name, horizon: simulation.horizon,
                customers: customers.flatMap { c in
                    // A customer whose token Apple replaced ends with nothing from that purchase.
                    [.init(customer: c.customer, scenario: c.scenario.rawValue, entitlements: c.expected, consumables: c.consumableUnits)]
                        + c.formerCustomers.map {
                            .init(customer: $0, scenario: c.scenario.rawValue + " (former)", entitlements: [], consumables: [:])
                        }
                })
            return current
        }
    }
}
