import Foundation
import TestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A plain TCP connection to 127.0.0.1, for what an HTTP client hides: a connection that sends
/// nothing, and when the server closes it.
final class RawConnection: @unchecked Sendable {
    private let fd: Int32

    init(port: Int, receiveTimeoutSeconds: Int) throws {
        #if canImport(Glibc)
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw TestSupportError("socket() failed: \(errno)") }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw TestSupportError("connect to 127.0.0.1:\(port) failed: \(errno)")
        }
    }

    deinit { close(fd) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw TestSupportError("write failed: \(errno)")
        }
    }

    /// Everything the server sends until it closes the connection, read on a thread of its own:
    /// a blocking read on the cooperative pool would stall every suite running beside this one.
    /// - Throws: When the receive timeout passes first (the server kept it open).
    func readUntilClosed() async throws -> [UInt8] {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try self.blockingReadUntilClosed() }) }.start()
        }
    }

    private func blockingReadUntilClosed() throws -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { return received }
            guard n > 0 else { throw TestSupportError("the server kept the connection open (read: errno \(errno))") }
            received += buffer[0..<n]
        }
    }
}
