import Foundation
import X509

/// A certificate chain that passed Apple's rules at one validation time.
public struct ValidatedChain: Hashable, Sendable {
    /// The signing certificate (from `x5c[0]`).
    public let leaf: Certificate
    /// The WWDR-style intermediate (from `x5c[1]`).
    public let intermediate: Certificate
    /// The configured trusted root the chain ends in (never taken from the token).
    public let root: Certificate
    /// Whether the root is Apple Root CA - G3; only such chains may carry Production data.
    public let isAnchoredInAppleRoot: Bool
    /// Whether OCSP confirmed leaf and intermediate as good.
    public let revocationChecked: Bool
    /// Whether this is StoreKit Testing in Xcode's one self-signed certificate (leaf, intermediate
    /// and root alike) rather than a chain validated to a trusted root: it vouches for `Xcode` data only.
    public let isXcodeTesting: Bool

    /// The span in which all three certificates are valid; validation at any time inside it would
    /// reach the same result offline.
    public var validityInterval: ClosedRange<Date> {
        let start = max(leaf.notValidBefore, intermediate.notValidBefore, root.notValidBefore)
        let end = min(leaf.notValidAfter, intermediate.notValidAfter, root.notValidAfter)
        return start...max(start, end)
    }
}
