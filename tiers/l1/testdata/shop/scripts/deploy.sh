#!/bin/sh
if [ -n "$1" ];then
echo   "deploying $1"
fi
