import EventLoopTimers
import GrantDecision
import PipelineTracing
import Synchronization
import Tracing

/// Group commit for grant: the batches that partition workers hand in while the store is busy are
/// applied together, in one transaction.
///
/// Each partition's batch is small when records arrive at a few hundred a second over eight
/// partitions, and a transaction costs about twenty statements however few events it carries. At
/// most ``maximumConcurrentTransactions`` run at once; a batch that arrives meanwhile waits and
/// joins the next one. An idle store therefore starts a batch at once, and a busy one makes fewer,
/// larger transactions. A batch of ``soloBatchSize`` events or more (a backlog, a replay) gains
/// nothing from company and starts a transaction of its own at once, as every batch did before. Every batch keeps its own order, and the batches of one transaction are
/// applied in the order they arrived, so each partition's order holds.
///
/// A fetch hands records of several partitions to their workers at the same moment, and the first
/// worker to arrive would start a transaction with its own record alone. So a transaction started
/// by an arriving batch first waits ``gatherWindow`` for the batches arriving with it (at 100
/// notifications/s, about 1.5 events a transaction without the wait, 3.3 with 5 ms).
///
/// A merged transaction that fails with a transient error fails every batch in it (each is retried
/// by its worker, as it would have been alone). One that fails otherwise is run again batch by batch,
/// so the error reaches only the batch that caused it.
public final class TransactionMerger: Sendable {
    public typealias Decisions = [Result<GrantDecision, GrantRejection>]

    struct Waiter {
        let events: [GrantEvent]
        let policy: GrantPolicy
        /// The caller's trace context (its record's span): the transaction that carries the batch
        /// is a child of the first batch's and links to the others'.
        let context: ServiceContext?
        let continuation: CheckedContinuation<Result<Decisions, StoreError>, Never>
    }

    struct State {
        var queue: [Waiter] = []
        var running = 0
        /// A transaction is waiting for company (``gatherWindow``): new batches join it.
        var gathering = false
    }

    let store: EntitlementStore
    /// How many transactions may run at once.
    public let maximumConcurrentTransactions: Int
    /// The most events one merged transaction takes (a single larger batch still runs whole).
    public let maximumEvents: Int
    /// A batch at least this large starts its own transaction however many are running.
    public let soloBatchSize: Int
    /// How long a transaction started by an arriving batch waits for the batches arriving with it.
    public let gatherWindow: Duration
    private let state = Mutex(State())
    private let transactions = Atomic<Int>(0)

    public init(
        store: EntitlementStore, maximumConcurrentTransactions: Int = 2, maximumEvents: Int = 1_000, soloBatchSize: Int = 100,
        gatherWindow: Duration = .zero
    ) {
        self.store = store
        self.maximumConcurrentTransactions = max(1, maximumConcurrentTransactions)
        self.maximumEvents = max(1, maximumEvents)
        self.soloBatchSize = max(1, soloBatchSize)
        self.gatherWindow = max(.zero, gatherWindow)
    }

    /// How many transactions this merger ran (a failed merged one run again batch by batch counts each time).
    public var transactionCount: Int { transactions.load(ordering: .relaxed) }

    /// Applies `events` in order, in a transaction possibly shared with other batches.
    /// - Returns: each event's decision, as ``EntitlementStore/apply(_:policy:)``.
    /// - Throws: ``StoreError`` when the transaction that carried these events failed.
    public func apply(_ events: [GrantEvent], policy: GrantPolicy) async throws(StoreError) -> Decisions {
        guard !events.isEmpty else { return [] }
        let context = ServiceContext.current
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Decisions, StoreError>, Never>) in
            enum Role { case join, lead, gather }
            let role = state.withLock { state -> Role in
                state.queue.append(Waiter(events: events, policy: policy, context: context, continuation: continuation))
                if events.count >= soloBatchSize {
                    state.running += 1
                    return .lead
                }
                guard state.running < maximumConcurrentTransactions, !state.gathering else { return .join }
                state.running += 1
                guard gatherWindow > .zero else { return .lead }
                state.gathering = true
                return .gather
            }
            switch role {
            case .join: break
            case .lead: Task { await self.drain() }
            case .gather:
                Task {
                    try? await EventLoopTimer.sleep(for: self.gatherWindow)
                    self.state.withLock { $0.gathering = false }
                    await self.drain()
                }
            }
        }
        return try outcome.get()
    }

    /// Runs rounds until nothing waits.
    private func drain() async {
        while let round = nextRound() {
            await run(round)
        }
    }

    /// The waiting batches for one transaction: in arrival order, with the first one's policy, up to
    /// ``maximumEvents`` events. Nil (and one runner fewer) when nothing waits.
    private func nextRound() -> [Waiter]? {
        state.withLock { state -> [Waiter]? in
            guard let first = state.queue.first else {
                state.running -= 1
                return nil
            }
            // The longest prefix of one policy within the event budget (the first always fits).
            var count = 0
            var events = 0
            for waiter in state.queue {
                guard waiter.policy == first.policy, count == 0 || events + waiter.events.count <= maximumEvents else { break }
                count += 1
                events += waiter.events.count
            }
            let round = Array(state.queue.prefix(count))
            state.queue.removeFirst(count)
            return round
        }
    }

    private func run(_ round: [Waiter]) async {
        let merged = await transaction(round.flatMap(\.events), policy: round[0].policy, for: round)
        switch merged {
        case .success(let decisions):
            var start = 0
            for waiter in round {
                waiter.continuation.resume(returning: .success(Array(decisions[start..<start + waiter.events.count])))
                start += waiter.events.count
            }
        case .failure(let error) where round.count == 1 || error.isTransient:
            for waiter in round { waiter.continuation.resume(returning: .failure(error)) }
        case .failure:
            for waiter in round { waiter.continuation.resume(returning: await transaction(waiter.events, policy: waiter.policy, for: [waiter])) }
        }
    }

    /// One transaction, in a client span (database conventions) that is a child of the first
    /// waiter's trace context and links to the other waiters'.
    private func transaction(_ events: [GrantEvent], policy: GrantPolicy, for waiters: [Waiter]) async -> Result<Decisions, StoreError> {
        transactions.add(1, ordering: .relaxed)
        let span = InstrumentationSystem.tracer.startSpan("grant transaction", context: waiters[0].context ?? .topLevel, ofKind: .client)
        if span.isRecording {
            span.updateAttributes { a in
                a[SpanAttributeName.dbSystem] = "postgresql"
                a[SpanAttributeName.dbOperation] = "grant_load grant_write"
                a[SpanAttributeName.messagingBatchCount] = Int64(events.count)
            }
            for waiter in waiters.dropFirst() {
                if let context = waiter.context { span.addLink(SpanLink(context: context, attributes: [:])) }
            }
        }
        defer { span.end() }
        let outcome = await ServiceContext.withValue(span.context) { () async -> Result<Decisions, StoreError> in
            do throws(StoreError) {
                return .success(try await store.apply(events, policy: policy))
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let error) = outcome {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.code.rawValue))
        }
        return outcome
    }
}
