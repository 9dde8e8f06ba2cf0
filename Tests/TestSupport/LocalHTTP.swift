import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization

public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Small HTTP helpers for process tests.
public enum LocalHTTP {
    /// The tests' HTTP client for the processes they start. It lets an idle pooled connection go
    /// after 30 s, before ingest does (75 s): `HTTPClient.shared` keeps one 600 s, and a request sent
    /// on one ingest closed at that moment failed with "I/O on closed channel" on a loaded machine.
    /// The gateway keeps the same order (nginx's upstream keep-alive, 60 s).
    public static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.connectionPool = .init(idleTimeout: .seconds(30))
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// How long a test waits for one answer from a process it started: a deadline against a hang,
    /// never a claim about speed (beside the whole suite on two cores a local answer has taken more
    /// than 10 s).
    public static let patience: TimeAmount = .seconds(60)

    /// Every port this process handed out: the kernel may offer a released port again at once, and
    /// two pipelines started side by side then gave one port to two children (grant stopped on
    /// "Address already in use" while the other's listener answered for it).
    private static let handedOut = Mutex<Set<Int>>([])

    /// Where ``freePort()`` looks: below Linux's ephemeral range (32768–60999), which the kernel
    /// draws from for every outgoing connection and every bind to port 0. A port taken from that
    /// range was sometimes taken again by one of the suite's thousands of client connections before
    /// the child bound it (grant stopped on "Address already in use" in a run of the whole suite);
    /// nothing takes a port from here but an explicit bind. The local stack's ports are below it.
    static let candidatePorts = 20_000..<28_000

    /// A TCP port that was free a moment ago and that this process never handed out before.
    public static func freePort() -> Int {
        for _ in 0..<1_000 {
            guard let held = try? HeldPort(port: Int.random(in: candidatePorts)) else { continue }
            held.release()
            if handedOut.withLock({ $0.insert(held.port).inserted }) { return held.port }
        }
        return 0
    }

    /// Waits until `127.0.0.1:port` accepts connections.
    public static func waitForPort(_ port: Int, timeout: Duration = .seconds(120)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if TestServices.portOpen("127.0.0.1:\(port)") { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestSupportError("nothing listens on 127.0.0.1:\(port) after \(timeout)")
    }

    /// Runs a shell script of the repository (e.g. `deploy/local/down broker`) with this process's
    /// environment and output, and waits for it (``ManagedProcess/run(_:_:stdin:environment:workingDirectory:streams:timeout:)``).
    public static func runScript(_ path: String, _ arguments: [String]) async throws {
        let script = TestServices.repositoryRoot.appendingPathComponent(path).path
        let result = try await ManagedProcess.run(URL(fileURLWithPath: "/bin/bash"), [script] + arguments, streams: .inherited)
        guard result.exit == .exited(0) else { throw TestSupportError("\(path) \(arguments) \(result.exit)") }
    }
}

/// A listening socket on a loopback port, so that a process started on that port cannot bind it.
public final class HeldPort {
    private var fd: Int32
    public let port: Int

    /// Holds `port`, or a port the kernel picks when it is 0.
    public init(port: Int = 0) throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, len) } }
        guard bound == 0, listen(socketFD, 1) == 0 else {
            close(socketFD)
            throw TestSupportError("could not hold a loopback port")
        }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &len) } }
        fd = socketFD
        self.port = Int(UInt16(bigEndian: addr.sin_port))
    }

    public func release() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit { release() }
}
