import JSONCoding
import SwiftASN1
import X509

/// Apple's root certificates that anchor App Store signed data.
///
/// Only **Apple Root CA - G3** signs App Store JWS chains (leaf → WWDR intermediate → this root). It is
/// a public certificate, published at apple.com/certificateauthority; embedding it means production
/// needs no trust-store file and nobody can swap the anchor through configuration.
public enum AppleRootCertificates {
    /// SHA-256 of the DER of Apple Root CA - G3, for operators to compare with Apple's published value.
    public static let appleRootCAG3SHA256 = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"

    /// DER of Apple Root CA - G3 (P-384, valid 2014-04-30 → 2039-04-30).
    public static let appleRootCAG3DER: [UInt8] = Base64.decodeStandard(appleRootCAG3Base64) ?? []

    /// Apple Root CA - G3 as a certificate.
    ///
    /// Parsing a constant cannot fail at run time unless the constant is damaged; a damaged constant
    /// yields `nil`, the verifier then trusts no Apple root, and every Apple-signed input is rejected
    /// (fail closed). A unit test pins the bytes to ``appleRootCAG3SHA256``.
    public static let appleRootCAG3: Certificate? = try? Certificate(derEncoded: appleRootCAG3DER)

    private static let appleRootCAG3Base64 = [
        "MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9vdCBDQSAtIEczMSYwJAYD",
        "VQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN",
        "MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBSb290IENBIC0gRzMxJjAkBgNVBAsMHUFw",
        "cGxlIENlcnRpZmljYXRpb24gQXV0aG9yaXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49",
        "AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtfTjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA",
        "/VhYDKX1DyxNB0cTddqXl5dvMVztK517IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr",
        "MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gAMGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZL",
        "uN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM",
        "6BgD56KyKA==",
    ].joined()
}
