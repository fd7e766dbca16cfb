/// The API's contract as the daemon serves it: docs/openapi.yaml, built into the binary by
/// SwiftPM (`embedInCode`), so the served document is the repository's by construction.
enum OpenAPIDocument {
    static let path = "/v1/openapi.yaml"
    static let yaml = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
}
