import os, sys
try:
    fd = os.open("/proc/11197/mem", os.O_RDWR); print("opened /proc/11197/mem read-write")
except OSError as e: print("refused:", e)
try:
    fd = os.open("/etc/shadow", os.O_RDONLY); print("read /etc/shadow: yes")
except OSError as e: print("shadow refused:", e)
