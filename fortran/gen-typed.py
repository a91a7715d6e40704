#!/usr/bin/env python3
"""Writes gpumem_typed.inc and gpumem_generics.inc: the type-specific
procedures of the Fortran helpers (one per Fortran type) and the generic
interfaces that name them.  Run it after changing the templates below:
    python3 fortran/gen-typed.py [OUTDIR]   (default: beside this script)
Both outputs are committed, so building needs no Python;
tests/test-fortran-abi.sh checks that they are what this script writes."""
import os
import sys

TYPES = [  # suffix, Fortran type, gpumem type
    ('l1', 'logical(c_bool)', 'GPUMEM_BOOL'),
    ('i1', 'integer(c_int8_t)', 'GPUMEM_INT8'),
    ('i2', 'integer(c_int16_t)', 'GPUMEM_INT16'),
    ('i4', 'integer(c_int32_t)', 'GPUMEM_INT32'),
    ('i8', 'integer(c_int64_t)', 'GPUMEM_INT64'),
    ('r4', 'real(c_float)', 'GPUMEM_FLOAT32'),
    ('r8', 'real(c_double)', 'GPUMEM_FLOAT64'),
    ('c4', 'complex(c_float_complex)', 'GPUMEM_COMPLEX64'),
    ('c8', 'complex(c_double_complex)', 'GPUMEM_COMPLEX128'),
]
MAXRANK = 7

def layout_body():
    """The select rank block that reads an array's address, shape and byte strides."""
    out = ['    select rank (a)', '    rank (0)', '      l%data = c_loc(a)']
    for r in range(1, MAXRANK + 1):
        ones = ', '.join(['1'] * r)
        out.append('    rank (%d)' % r)
        out.append('      if (size(a) > 0) then')
        out.append('        l%%data = c_loc(a(%s))' % ones)
        for d in range(r):
            idx = ', '.join('2' if k == d else '1' for k in range(r))
            out.append('        if (size(a, %d) > 1) l%%strides(%d) = addr(c_loc(a(%s))) - addr(l%%data)'
                       % (d + 1, d + 1, idx))
        out.append('      end if')
    out += ['    rank default', '      l%ndim = -1', '    end select']
    return '\n'.join(out)

def procs(sfx, ftype, gtype):
    body = layout_body()
    return f'''
  ! ---- {ftype} ----
  subroutine layout_{sfx}(a, l)
    {ftype}, dimension(..), target, intent(in) :: a
    type(f_layout), intent(out) :: l
    l%ndim = rank(a)
    if (l%ndim >= 1 .and. l%ndim <= {MAXRANK}) l%shape(1:l%ndim) = shape(a, kind=c_int64_t)
{body}
    call fill_strides(l, int(storage_size(a) / 8, c_int64_t))
  end subroutine layout_{sfx}

  function wrap_{sfx}(a, array, errmsg) result(st)
    {ftype}, dimension(..), target :: a
    type(c_ptr), intent(out) :: array
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    type(f_layout) :: l
    call layout_{sfx}(a, l)
    st = wrap_layout(l, {gtype}, 'gpumem_f_wrap', array, errmsg)
  end function wrap_{sfx}

  function to_device_{sfx}(ctx, a, array, stream, flags, errmsg) result(st)
    type(c_ptr), intent(in) :: ctx
    {ftype}, dimension(..), target, intent(in) :: a
    type(c_ptr), intent(out) :: array
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(in), optional :: flags
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    type(f_layout) :: l
    call layout_{sfx}(a, l)
    st = to_device_layout(ctx, l, {gtype}, array, stream, flags, errmsg)
  end function to_device_{sfx}

  function copy_to_host_{sfx}(src, a, stream, errmsg) result(st)
    type(c_ptr), intent(in) :: src
    {ftype}, dimension(..), target, intent(inout) :: a
    type(c_ptr), intent(in), optional :: stream
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    type(f_layout) :: l
    call layout_{sfx}(a, l)
    st = copy_layout(src, l, {gtype}, .true., stream, errmsg)
  end function copy_to_host_{sfx}

  function copy_to_device_{sfx}(dst, a, stream, errmsg) result(st)
    type(c_ptr), intent(in) :: dst
    {ftype}, dimension(..), target, intent(in) :: a
    type(c_ptr), intent(in), optional :: stream
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    type(f_layout) :: l
    call layout_{sfx}(a, l)
    st = copy_layout(dst, l, {gtype}, .false., stream, errmsg)
  end function copy_to_device_{sfx}

  function pointer_{sfx}(array, p, errmsg) result(st)
    type(c_ptr), intent(in) :: array
    {ftype}, dimension(..), pointer, intent(out) :: p
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    type(c_ptr) :: host
    integer(c_int64_t) :: shp({MAXRANK})
    st = view_check(array, rank(p), {gtype}, int(storage_size(p) / 8, c_int64_t), host, shp, errmsg)
    select rank (p)
    rank (0)
      nullify(p)
      if (st == GPUMEM_OK) call c_f_pointer(host, p)
    rank (1)
      nullify(p)
      if (st == GPUMEM_OK) call c_f_pointer(host, p, shp(1:1))
    rank (2)
      nullify(p)
      if (st == GPUMEM_OK) call c_f_pointer(host, p, shp(1:2))
    rank (3)
      nullify(p)
      if (st == GPUMEM_OK) call c_f_pointer(host, p, shp(1:3))
    rank (4)
      nullify(p)
      if (st == GPUMEM_OK) call c_f_pointer(host, p, shp(1:4))
    rank (5)
      nullify(p)
      if (st == GPUMEM_OK) call c_f_pointer(host, p, shp(1:5))
    rank (6)
      nullify(p)
      if (st == GPUMEM_OK) call c_f_pointer(host, p, shp(1:6))
    rank (7)
      nullify(p)
      if (st == GPUMEM_OK) call c_f_pointer(host, p, shp(1:7))
    end select
  end function pointer_{sfx}
'''

INDEX_KINDS = [('x4', 'c_int32_t'), ('x8', 'c_int64_t')]  # the kinds of Fortran indices taken


def item_procs(sfx, ftype, gtype):
    """gpumem_f_get_item and gpumem_f_set_item of one type, for each kind of index."""
    out = []
    for xs, xkind in INDEX_KINDS:
        out.append(f'''
  function get_item_{sfx}_{xs}(array, index, value, stream, errmsg) result(st)
    type(c_ptr), intent(in) :: array
    integer({xkind}), intent(in) :: index(:)
    {ftype}, intent(inout) :: value
    type(c_ptr), intent(in), optional :: stream
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    integer(c_int64_t) :: c(GPUMEM_MAX_NDIM)
    type(c_ptr) :: s
    st = item_check(array, int(index, c_int64_t), {gtype}, 'gpumem_f_get_item', c, errmsg)
    if (st /= GPUMEM_OK) return
    s = c_null_ptr
    if (present(stream)) s = stream
    st = gpumem_array_get_item_n(array, size(index, kind=c_int), c, value, s)
    call c_errmsg(st, errmsg)
  end function get_item_{sfx}_{xs}

  function set_item_{sfx}_{xs}(array, index, value, stream, errmsg) result(st)
    type(c_ptr), intent(in) :: array
    integer({xkind}), intent(in) :: index(:)
    {ftype}, intent(in) :: value
    type(c_ptr), intent(in), optional :: stream
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    integer(c_int64_t) :: c(GPUMEM_MAX_NDIM)
    type(c_ptr) :: s
    st = item_check(array, int(index, c_int64_t), {gtype}, 'gpumem_f_set_item', c, errmsg)
    if (st /= GPUMEM_OK) return
    s = c_null_ptr
    if (present(stream)) s = stream
    st = gpumem_array_set_item_n(array, size(index, kind=c_int), c, value, s)
    call c_errmsg(st, errmsg)
  end function set_item_{sfx}_{xs}
''')
    return ''.join(out)


def generics():
    out = []
    for gen, base in [('gpumem_f_wrap', 'wrap'), ('gpumem_f_to_device', 'to_device'),
                      ('gpumem_f_copy_to_host', 'copy_to_host'), ('gpumem_f_copy_to_device', 'copy_to_device'),
                      ('gpumem_f_pointer', 'pointer')]:
        names = ''.join('    module procedure %s_%s\n' % (base, t[0]) for t in TYPES)
        out.append('  interface %s\n%s  end interface %s' % (gen, names, gen))
    for gen, base in [('gpumem_f_get_item', 'get_item'), ('gpumem_f_set_item', 'set_item')]:
        names = ''.join('    module procedure %s_%s_%s\n' % (base, t[0], x[0]) for t in TYPES for x in INDEX_KINDS)
        out.append('  interface %s\n%s  end interface %s' % (gen, names, gen))
    return '\n'.join(out) + '\n'

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
head = '! Generated by fortran/gen-typed.py: edit that file, not this one.\n'
with open(os.path.join(here, 'gpumem_typed.inc'), 'w') as f:
    f.write(head + ''.join(procs(*t) + item_procs(*t) for t in TYPES))
with open(os.path.join(here, 'gpumem_generics.inc'), 'w') as f:
    f.write(head + generics())
