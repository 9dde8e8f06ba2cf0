import SwiftASN1

/// The extensions Apple puts on the certificates that sign App Store data.
///
/// Their presence (not their value, which is DER NULL) is what distinguishes an App Store receipt
/// signer from any other certificate Apple's root has issued. Leaf and intermediate must carry them.
public enum AppleMarkerExtensions {
    /// "Receipt Signing", required on the leaf: 1.2.840.113635.100.6.11.1.
    public static let receiptSigning: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    /// "Worldwide Developer Relations intermediate", required on the intermediate: 1.2.840.113635.100.6.2.1.
    public static let wwdrIntermediate: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]
    /// The value Apple uses for both: an ASN.1 NULL.
    public static let value: [UInt8] = [0x05, 0x00]
}
