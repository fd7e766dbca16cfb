import Testing
import ThumbAccess
@testable import ThumbServer

/// The TCP listener's Host rule (DNS rebinding) on its own: read in place on every request.
@Suite struct AccessHostTests {
    static func control(hosts: [String] = []) throws -> AccessControl {
        var settings = AccessSettings()
        settings.hosts = hosts
        return try AccessControl(settings: settings, environment: [:])
    }

    @Test("loopback addresses, localhost and configured names, any port, any case", arguments: [
        "127.0.0.1", "127.0.0.1:8080", "127.255.255.255", "127.000.0.1", "LOCALHOST:1", "localhost", "[::1]", "[::1]:80",
        "thumbs.internal", "Thumbs.Internal:443",
    ])
    func ownHosts(_ host: String) throws {
        #expect(try Self.control(hosts: ["thumbs.internal"]).isOwnHost(host))
    }

    @Test("anything else is another host", arguments: [
        "", "evil.example", "evil.example:80", "127.0.0.256", "128.0.0.1", "127.0.0", "127.0.0.1.5", "1270.0.0.1", "127..0.1",
        "127.0.0.1a", "[::2]", "[::1", "localhost.evil", "localhos", "thumbs.internal.evil", "0x7f.0.0.1",
        // What follows the name must be a port: the name alone once decided.
        "[::1].evil.com", "[::1]evil", "[::1]:", "[::1]:80x", "localhost:evil.com", "127.0.0.1:evil.com", "localhost:", "localhost:123456",
        "thumbs.internal:evil", "127.0.0.1:80:80",
    ])
    func otherHosts(_ host: String) throws {
        #expect(!(try Self.control(hosts: ["thumbs.internal"]).isOwnHost(host)))
        #expect(!(try Self.control().isOwnHost(nil)))
    }

    @Test("a configured name is needed for a name that is not localhost")
    func configuredNamesOnly() throws {
        #expect(!(try Self.control().isOwnHost("thumbs.internal")))
        #expect(!(try Self.control().isOwnHost(String(repeating: "a", count: 301))))
    }
}
