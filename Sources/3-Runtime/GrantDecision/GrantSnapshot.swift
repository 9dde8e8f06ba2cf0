import Foundation

/// What grant knows about one event's purchase before deciding: the input of ``GrantDecider``.
public struct GrantSnapshot: Hashable, Sendable {
    /// The purchase's state, if any event about it was applied before.
    public var purchase: PurchaseState?
    /// Every entitlement row the purchase produced (any customer, active or not).
    public var entitlements: [EntitlementGrant]
    /// The consumable grant, when the event is about a consumable.
    public var consumable: ConsumableGrant?
    /// True when this very event (same event key) was applied already.
    public var alreadyApplied: Bool
    /// The customers (of the event's environment) whose access is suspended because their consent
    /// was rescinded (``GrantPolicy/RescindedConsentPolicy/suspend``): filled only under that policy.
    public var suspendedCustomers: Set<UUID>

    public init(
        purchase: PurchaseState? = nil, entitlements: [EntitlementGrant] = [], consumable: ConsumableGrant? = nil, alreadyApplied: Bool = false,
        suspendedCustomers: Set<UUID> = []
    ) {
        self.suspendedCustomers = suspendedCustomers
        self.purchase = purchase
        self.entitlements = entitlements
        self.consumable = consumable
        self.alreadyApplied = alreadyApplied
    }
}

/// What one event does: the new state to write and the changes it makes. ``GrantDecider``'s output.
public struct GrantDecision: Hashable, Sendable {
    /// How the event was handled; recorded in the notifications log.
    public enum Outcome: String, Hashable, Sendable, Codable {
        /// The event moved the purchase's state (possibly without entitlement changes).
        case applied
        /// The same event was applied before: nothing changes.
        case duplicate
        /// Older than the state already applied: its claim and transactions are recorded, the state stays.
        case stale
        /// Recorded for audit; this kind of event changes no entitlement (TEST, REFUND_DECLINED,
        /// CONSUMPTION_REQUEST, summaries, consent, external purchase tokens, unknown types).
        case recorded
    }

    public var outcome: Outcome
    /// The event, normalised.
    public var event: GrantEvent
    /// The purchase's new state (unchanged when nothing moved); nil for consumables and for events
    /// that name no purchase.
    public var purchase: PurchaseState?
    /// The purchase's entitlement rows after the event (only rows that differ from before).
    public var entitlements: [EntitlementGrant]
    /// The purchase's entitlement rows that no longer apply, to delete.
    public var deletions: [EntitlementGrant.ID]
    /// The consumable grant after the event.
    public var consumable: ConsumableGrant?
    /// The changes, in a deterministic order.
    public var changes: [EntitlementChange]
    /// Customers whose claim on the purchase is refused (recorded in `ownership_claims`).
    public var refusedClaims: [UUID]
    /// A human note for the log (why recorded only, why stale, which claim was refused).
    public var note: String?

    /// Whether its commit leaves an event for the outbox publisher: changes, or a new
    /// `EXTERNAL_PURCHASE_TOKEN` (published without a customer).
    public var publishes: Bool {
        !changes.isEmpty || (outcome != .duplicate && event.externalPurchaseToken != nil)
    }

    public init(
        outcome: Outcome, event: GrantEvent, purchase: PurchaseState? = nil, entitlements: [EntitlementGrant] = [],
        deletions: [EntitlementGrant.ID] = [], consumable: ConsumableGrant? = nil, changes: [EntitlementChange] = [], refusedClaims: [UUID] = [],
        note: String? = nil
    ) {
        self.outcome = outcome
        self.event = event
        self.purchase = purchase
        self.entitlements = entitlements
        self.deletions = deletions
        self.consumable = consumable
        self.changes = changes
        self.refusedClaims = refusedClaims
        self.note = note
    }
}
