"""Exchange with other libraries' array types.

``tack.interop.vtk`` moves arrays between Tack and VTK without copies;
``tack.interop.vtk_dlpack`` provides VTK's DLPack functions for VTK builds that lack
``vtkmodules.util.dlpack_support``; ``tack.interop.mpi`` tells whether the MPI that
mpi4py loaded can read a device's memory (``docs/mpi.md``). None is imported by
``import tack``: VTK and MPI are optional dependencies.
"""
