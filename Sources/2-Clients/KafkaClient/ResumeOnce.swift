import Synchronization

/// A continuation that the first of several racers resumes (an acknowledgement and a deadline, a
/// close and its timeout); a later racer finds it gone and does nothing.
final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, Never>?>

    init(_ continuation: CheckedContinuation<T, Never>) { self.continuation = Mutex(continuation) }

    /// Resumes with `value` if no racer did before; returns whether this call did.
    @discardableResult
    func resume(_ value: T) -> Bool {
        guard
            let taken = continuation.withLock({ c in
                defer { c = nil }
                return c
            })
        else { return false }
        taken.resume(returning: value)
        return true
    }
}
