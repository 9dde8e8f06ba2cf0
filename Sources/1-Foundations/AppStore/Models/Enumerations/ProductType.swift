/// The type of an in-app purchase.
///
/// Consumables never appear in transaction history, so grant treats them differently. Unknown values decode to
/// ``unknown(_:)`` and are kept.
/// See [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/type).
public enum ProductType: AppStoreStringEnumeration {
    /// Apple: "Auto-Renewable Subscription".
    case autoRenewableSubscription
    /// Apple: "Non-Consumable".
    case nonConsumable
    /// Apple: "Consumable".
    case consumable
    /// Apple: "Non-Renewing Subscription".
    case nonRenewingSubscription
    /// A value this version of the code does not know, kept verbatim.
    case unknown(String)

    public static let knownValues: [ProductType] = [
        .autoRenewableSubscription,
        .nonConsumable,
        .consumable,
        .nonRenewingSubscription,
    ]

    public var rawValue: String {
        switch self {
        case .autoRenewableSubscription: "Auto-Renewable Subscription"
        case .nonConsumable: "Non-Consumable"
        case .consumable: "Consumable"
        case .nonRenewingSubscription: "Non-Renewing Subscription"
        case .unknown(let rawValue): rawValue
        }
    }
}
