import Crypto
import Foundation

/// The one customer an authenticated user is, in every environment: how ingest turns the user a
/// credential vouches for (a bearer token's claim, or the `userId` an HMAC-signing backend sends)
/// into the `appAccountToken` that names the user's customer.
///
/// A user ID that is itself a UUID is the customer (the usual practice: the app sets
/// `appAccountToken` to its own user's UUID at purchase). Any other user ID is mapped by a name-based
/// UUID (RFC 9562 version 5, SHA-1) in ``namespace``, so ingest needs no lookup, every replica and
/// the app's backend compute the same customer, and no user can pick another's.
public enum CustomerIdentity {
    /// The namespace of name-based customer IDs. Fixed: changing it would give every user a new customer.
    public static let namespace = UUID(uuidString: "6f1a3c52-8d4e-5b7a-9c21-3e5f7a9b0d14")!

    /// The customer the user `userId` is.
    public static func customer(forUser userId: String) -> UUID {
        if let uuid = UUID(uuidString: userId) { return uuid }
        return nameBased(userId, in: namespace)
    }

    /// RFC 9562's version 5 UUID of `name` (its UTF-8 bytes) in `namespace`.
    public static func nameBased(_ name: String, in namespace: UUID) -> UUID {
        var hasher = Insecure.SHA1()
        withUnsafeBytes(of: namespace.uuid) { hasher.update(bufferPointer: $0) }
        hasher.update(data: Array(name.utf8))
        var bytes = Array(hasher.finalize().prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
