import Foundation

/// How a ``SigningAuthority`` shapes its certificates.
///
/// The defaults mirror Apple's production chain (P-384 root and intermediate, P-256 leaf, marker
/// extensions present, generous validity). The knobs exist so tests can build every broken variant a
/// verifier must reject: missing markers, expired or future leaves, OCSP locations.
public struct SigningAuthorityOptions: Sendable {
    /// Prefix of every subject common name, so several authorities are told apart.
    public var name: String
    /// Validity of the self-signed root.
    public var rootValidity: ClosedRange<Date>
    /// Validity of the intermediate.
    public var intermediateValidity: ClosedRange<Date>
    /// Validity of the signing leaf.
    public var leafValidity: ClosedRange<Date>
    /// Whether the intermediate carries Apple's WWDR marker 1.2.840.113635.100.6.2.1.
    public var intermediateHasMarker: Bool
    /// Whether the leaf carries Apple's receipt-signing marker 1.2.840.113635.100.6.11.1.
    public var leafHasMarker: Bool
    /// When set, the intermediate and leaf name OCSP responders in their Authority Information Access
    /// extension: `<ocspBaseURL>/root` answers for the intermediate, `<ocspBaseURL>/intermediate` for
    /// the leaf (Apple's certificates name `http://ocsp.apple.com/...` the same way).
    public var ocspBaseURL: String?

    /// - Parameter now: The reference time for the default validity windows: root and intermediate
    ///   from a year before `now` for 20 and 10 years (so data signed in the past still verifies), the
    ///   leaf from a day before `now` for 2 years (like Apple's leaves).
    public init(
        name: String = "Local App Store",
        now: Date = Date(),
        intermediateHasMarker: Bool = true,
        leafHasMarker: Bool = true,
        ocspBaseURL: String? = nil
    ) {
        let day: TimeInterval = 86_400
        let caStart = now.addingTimeInterval(-365 * day)
        let leafStart = now.addingTimeInterval(-day)
        self.name = name
        self.rootValidity = caStart...caStart.addingTimeInterval(20 * 365 * day)
        self.intermediateValidity = caStart...caStart.addingTimeInterval(10 * 365 * day)
        self.leafValidity = leafStart...leafStart.addingTimeInterval(2 * 365 * day)
        self.intermediateHasMarker = intermediateHasMarker
        self.leafHasMarker = leafHasMarker
        self.ocspBaseURL = ocspBaseURL
    }
}
