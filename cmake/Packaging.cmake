# What a release ships: the gateway binary, its default config and its systemd unit.
# `make deb` packs them with CPack (build/sluice_VERSION_ARCH.deb); `make dist` (scripts/dist.sh)
# adds a tarball, an SBOM and SHA256SUMS. Only the sluice target is installed: the tests,
# benchmarks and the screening trainer are not part of a release.
install(TARGETS sluice RUNTIME DESTINATION bin)
# Absolute destinations: Debian keeps configs in /etc and (bookworm) package units in
# /lib/systemd/system, whatever the /usr prefix.
install(FILES ${CMAKE_SOURCE_DIR}/deploy/debian/sluice.yaml DESTINATION /etc/sluice)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/sluice.service DESTINATION /lib/systemd/system)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sluice)
set(CPACK_PACKAGE_VENDOR "Sluice")
set(CPACK_PACKAGE_CONTACT "Sluice maintainers <sluice@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Self-hosted LLM gateway (OpenAI, Anthropic, Gemini behind one endpoint)")
set(CPACK_PACKAGE_DESCRIPTION "Sluice authenticates callers, picks a channel and an upstream key, fails over, streams answers back and counts tokens. Runs as the sluice systemd service.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: dpkg-shlibdeps computes the library packages from the binary itself (exact, with the
# minimum versions their symbols need); ca-certificates is not a library but TLS to the providers
# needs it, and libpq5 is opened at run time (when the store is PostgreSQL), not linked.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "ca-certificates, libpq5")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/deploy/debian/conffiles ${CMAKE_SOURCE_DIR}/deploy/debian/postinst
    ${CMAKE_SOURCE_DIR}/deploy/debian/prerm ${CMAKE_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
