import JSONCoding
import Testing

@Suite("Strict base64 and base64url")
struct Base64Tests {
    @Test("encoding matches RFC 4648 test vectors")
    func vectors() {
        let vectors: [(String, String, String)] = [
            ("", "", ""), ("f", "Zg==", "Zg"), ("fo", "Zm8=", "Zm8"), ("foo", "Zm9v", "Zm9v"),
            ("foob", "Zm9vYg==", "Zm9vYg"), ("fooba", "Zm9vYmE=", "Zm9vYmE"), ("foobar", "Zm9vYmFy", "Zm9vYmFy"),
        ]
        for (plain, standard, url) in vectors {
            #expect(Base64.encodeStandard(Array(plain.utf8)) == standard)
            #expect(Base64.encodeURL(Array(plain.utf8)) == url)
            #expect(Base64.decodeStandard(standard) == Array(plain.utf8))
            #expect(Base64.decodeURL(url) == Array(plain.utf8))
        }
        #expect(Base64.encodeURL([0xFB, 0xFF]) == "-_8")
        #expect(Base64.encodeStandard([0xFB, 0xFF]) == "+/8=")
    }

    @Test("round trip of every length up to 300 and every byte value")
    func roundTrip() {
        var bytes: [UInt8] = []
        for length in 0...300 {
            #expect(Base64.decodeURL(Base64.encodeURL(bytes)) == bytes)
            #expect(Base64.decodeStandard(Base64.encodeStandard(bytes)) == bytes)
            bytes.append(UInt8(truncatingIfNeeded: length * 37 + 11))
        }
    }

    @Test(
        "non-canonical or foreign input is refused",
        arguments: ["Zg=", "Zg==", "Zh", "Zm9=", "Z", "Zm9v Yg", "Zm+v", "Zm/v", "Zm9v\n", "é", "Zm9vY"]
    )
    func refusedURL(text: String) {
        #expect(Base64.decodeURL(text) == nil)
    }

    @Test(
        "standard base64 requires padding and its own alphabet",
        arguments: ["Zg", "Zh==", "Zm9-", "Zm9_", "Zg=A", "===="]
    )
    func refusedStandard(text: String) {
        #expect(Base64.decodeStandard(text) == nil)
    }
}
