# Installed layout of peregrine, included from tools/peregrine/CMakeLists.txt
# so that `cmake --install` and the Debian package (packaging/debian/, which
# only runs this install) agree. See packaging/README.md.
#
#   /usr/bin/peregrine                       the multi-call binary (installed beside this include)
#   /usr/sbin/{mkfs,fsck,mount}.peregrine,   relative symlinks to ../bin/peregrine:
#   /usr/sbin/umount.fuse.peregrine          mkfs(8), fsck(8), mount(8) and umount(8) look for
#                                            helpers in /sbin, which is /usr/sbin on merged-/usr
#                                            Debian 12 (umount(8) by the mount's type, fuse.peregrine)
#   /etc/peregrine/peregrine.conf            the commented default config (a conffile in the .deb)
#   /lib/systemd/system/peregrine@.service   (Debian 12's unit directory)
#   /usr/share/man/man5/peregrine.conf.5, man8/{peregrine,mkfs.peregrine,fsck.peregrine,mount.peregrine,
#                                            umount.fuse.peregrine}.8,
#   man1/peregrine-graph{,-bench}.1          (the graph tool, installed by graph/, and its benchmark, by tools/)
#   /usr/lib/modprobe.d/peregrine.conf       options fuse enable_uring=1 (docs/transport.md)
#   /usr/share/doc/peregrine/*.md            every page of docs/: the conf file and the man pages
#                                            refer to them (configuration.md, performance.md,
#                                            usage.md, ...)

set(PEREGRINE_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)

foreach(alias mkfs.peregrine fsck.peregrine mount.peregrine umount.fuse.peregrine)
  # install(CODE) because CMake has no install rule for symlinks; DESTDIR is
  # honoured so staged installs (dh_auto_install) work.
  install(CODE "
    set(link \"\$ENV{DESTDIR}${CMAKE_INSTALL_FULL_SBINDIR}/${alias}\")
    file(MAKE_DIRECTORY \"\$ENV{DESTDIR}${CMAKE_INSTALL_FULL_SBINDIR}\")
    file(RELATIVE_PATH target \"${CMAKE_INSTALL_FULL_SBINDIR}\" \"${CMAKE_INSTALL_FULL_BINDIR}/peregrine\")
    message(STATUS \"Installing: \${link} -> \${target}\")
    file(CREATE_LINK \"\${target}\" \"\${link}\" SYMBOLIC)
  ")
endforeach()

install(FILES ${PROJECT_SOURCE_DIR}/conf/peregrine.conf DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/peregrine)

# systemd's unit directory for packages: /lib/systemd/system on Debian 12
# (where dh_installsystemd and systemd itself put them), else under the prefix.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(unit_dir_default /lib/systemd/system)
else()
  set(unit_dir_default ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
endif()
set(PEREGRINE_SYSTEMD_UNIT_DIR ${unit_dir_default} CACHE PATH "Where peregrine@.service is installed")
# ExecStart names the installed binary.
configure_file(${PEREGRINE_PACKAGING_DIR}/systemd/peregrine@.service.in ${CMAKE_CURRENT_BINARY_DIR}/peregrine@.service @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/peregrine@.service DESTINATION ${PEREGRINE_SYSTEMD_UNIT_DIR})

install(FILES ${PEREGRINE_PACKAGING_DIR}/man/peregrine.conf.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES ${PEREGRINE_PACKAGING_DIR}/man/peregrine-graph.1 ${PEREGRINE_PACKAGING_DIR}/man/peregrine-graph-bench.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES
  ${PEREGRINE_PACKAGING_DIR}/man/peregrine.8
  ${PEREGRINE_PACKAGING_DIR}/man/mkfs.peregrine.8
  ${PEREGRINE_PACKAGING_DIR}/man/fsck.peregrine.8
  ${PEREGRINE_PACKAGING_DIR}/man/mount.peregrine.8
  ${PEREGRINE_PACKAGING_DIR}/man/umount.fuse.peregrine.8
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)

# Every page of docs/: the conf file, the man pages and README.md's table of
# documentation refer to them by name.
file(GLOB peregrine_docs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${peregrine_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})
# modprobe.d under the prefix's lib (not the multiarch libdir): /usr/lib/modprobe.d.
install(FILES ${PEREGRINE_PACKAGING_DIR}/modprobe/peregrine.conf DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/modprobe.d)
