#if canImport(Glibc)
import Glibc
#endif

exit(Thumbd.main(arguments: Array(CommandLine.arguments.dropFirst())).rawValue)
