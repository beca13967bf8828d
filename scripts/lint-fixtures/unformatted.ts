export const planted = {a:1,"b":2};
