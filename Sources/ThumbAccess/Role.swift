/// What a caller may do, few and fixed. Each role has every right of the ones below it.
///
/// - `public`: named kinds (or any spec, with a valid signature), placeholders, kinds, health.
/// - `client`: adds inline specs, slots, prefetch, JSON answers and reading focus points.
/// - `operator`: adds purge, focus writes, cache statistics and metrics.
package enum Role: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible {
    case `public` = 0, client = 1, `operator` = 2

    package static func < (lhs: Role, rhs: Role) -> Bool { lhs.rawValue < rhs.rawValue }

    package init?(name: String) {
        switch name {
        case "public": self = .public
        case "client": self = .client
        case "operator": self = .operator
        default: return nil
        }
    }

    package var description: String {
        switch self {
        case .public: "public"
        case .client: "client"
        case .operator: "operator"
        }
    }
}
